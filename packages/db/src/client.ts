import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from './generated/prisma/client';

export { Prisma, PrismaClient } from './generated/prisma/client';

export interface PrismaClientOptions {
  /** Most connections the pool opens. */
  maxConnections?: number;
  /** How long a query may wait for a free connection or for the server to answer a connect. */
  connectionTimeoutMs?: number;
  /**
   * PostgreSQL cancels any statement of this pool that runs longer (the connections'
   * statement_timeout, sent when each connects: no extra round trip per query). Default: no limit.
   */
  statementTimeoutMs?: number;
  /** Names the pool's connections in pg_stat_activity, e.g. `herald-api:merchant-reads`. */
  applicationName?: string;
  /**
   * Plan each prepared statement once per connection (plan_cache_mode=force_generic_plan), for a
   * pool whose statements look rows up by key, where no parameter value changes the best plan. By
   * default PostgreSQL plans a prepared statement afresh at its first executions and whenever it
   * judges the generic plan worse, which over the partitioned deliveries tables costs milliseconds
   * per statement: measured with bench/profile.ts deliver, the worker's PostgreSQL CPU per callback
   * went from 493 µs to 239 µs with generic plans.
   */
  genericPlans?: boolean;
}

// The node-postgres pool under each client. Every repository statement goes through it (see
// sql.ts): Prisma's query pipeline costs about as much CPU as PostgreSQL's work on the small
// hot-path statements (measured: twice the time of a bare pg query for a one-row SELECT).
const pools = new WeakMap<PrismaClient, pg.Pool>();

/** A Prisma client over node-postgres (Prisma 7's driver adapter), sharing its pool with `sqlPool`. */
export function createPrismaClient(databaseUrl: string, options: PrismaClientOptions = {}): PrismaClient {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 5_000,
    ...(options.statementTimeoutMs === undefined ? {} : { statement_timeout: options.statementTimeoutMs }),
    ...(options.applicationName === undefined ? {} : { application_name: options.applicationName }),
    ...(options.genericPlans ? { options: '-c plan_cache_mode=force_generic_plan' } : {}),
  });
  // An idle connection that PostgreSQL closes emits 'error' on the pool; the next query reconnects.
  pool.on('error', () => undefined);
  const client = new PrismaClient({ adapter: new PrismaPg(pool) });
  // The client owns the pool: $disconnect ends it. Prisma's adapter would end it only if a Prisma
  // query had opened the engine, and the repositories send every statement through the pool.
  const disconnect = client.$disconnect.bind(client);
  client.$disconnect = async () => {
    await disconnect();
    if (!pool.ended) await pool.end();
  };
  pools.set(client, pool);
  return client;
}

/** The pool of a client made by createPrismaClient, for SQL sent without Prisma. */
export function sqlPool(prisma: PrismaClient): pg.Pool {
  const pool = pools.get(prisma);
  if (!pool) throw new Error('sqlPool: this PrismaClient was not made by createPrismaClient');
  return pool;
}

/**
 * Resolves when PostgreSQL answers a trivial query on the pool. Sent without Prisma: the first
 * Prisma query of a process loads its query compiler (measured: about 75 MB of memory), which the
 * delivery worker, whose statements are all plain SQL, never needs.
 */
export async function pingDatabase(prisma: PrismaClient): Promise<void> {
  await sqlPool(prisma).query('SELECT 1');
}
