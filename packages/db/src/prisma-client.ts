/**
 * `@herald/db/prisma`: a Prisma client, for the tests, the bench and the fault scenarios, which
 * seed and inspect through its model API. No service imports this module (the services run every
 * statement on a pool of pool.ts), so no service process loads @prisma/client or its adapter.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/prisma/client';
import { closeDatabasePool, createDatabasePool, type DatabasePool, type DatabasePoolOptions } from './pool';

export { PrismaClient } from './generated/prisma/client';

const pools = new WeakMap<PrismaClient, DatabasePool>();

/** A Prisma client over a pool of createDatabasePool (Prisma 7's driver adapter), shared with `sqlPool`. */
export function createPrismaClient(databaseUrl: string, options: DatabasePoolOptions = {}): PrismaClient {
  const pool = createDatabasePool(databaseUrl, options);
  const client = new PrismaClient({ adapter: new PrismaPg(pool) });
  // The client owns the pool: $disconnect ends it. Prisma's adapter would end it only if a Prisma
  // query had opened the engine, and the repositories send their statements through the pool.
  const disconnect = client.$disconnect.bind(client);
  client.$disconnect = async () => {
    await disconnect();
    await closeDatabasePool(pool);
  };
  pools.set(client, pool);
  return client;
}

/** The pool of a client made by createPrismaClient, for the repositories. */
export function sqlPool(prisma: PrismaClient): DatabasePool {
  const pool = pools.get(prisma);
  if (!pool) throw new Error('sqlPool: this PrismaClient was not made by createPrismaClient');
  return pool;
}
