import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/prisma/client';

export { Prisma, PrismaClient } from './generated/prisma/client';

export interface PrismaClientOptions {
  /** Most connections the pool opens. */
  maxConnections?: number;
  /** How long a query may wait for a free connection or for the server to answer a connect. */
  connectionTimeoutMs?: number;
}

/** A Prisma client over node-postgres (Prisma 7's driver adapter). */
export function createPrismaClient(databaseUrl: string, options: PrismaClientOptions = {}): PrismaClient {
  const adapter = new PrismaPg({
    connectionString: databaseUrl,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 5_000,
  });
  return new PrismaClient({ adapter });
}
