import pg from 'pg';

/**
 * A node-postgres pool: how the services reach PostgreSQL. Every repository statement runs on one
 * (see sql.ts). The services never load Prisma: its client and driver adapter cost a process about
 * 17 MB of memory at start-up, and its query pipeline about as much CPU as PostgreSQL's work on the
 * small hot-path statements (measured: twice the time of a bare pg query for a one-row SELECT).
 */
export type DatabasePool = pg.Pool;

export interface DatabasePoolOptions {
  /** Most connections the pool opens. Default 10. */
  maxConnections?: number;
  /** How long a query may wait for a free connection or for the server to answer a connect. Default 5000. */
  connectionTimeoutMs?: number;
  /**
   * PostgreSQL cancels any statement of this pool that runs longer (the connections'
   * statement_timeout, sent when each connects: no extra round trip per query). Default: no limit.
   */
  statementTimeoutMs?: number;
  /**
   * PostgreSQL ends the session of a connection of this pool that stays this long inside a
   * transaction without sending a statement (idle_in_transaction_session_timeout, sent when each
   * connects), rolling the transaction back and releasing its locks. Default: no limit.
   */
  idleInTransactionTimeoutMs?: number;
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
  /**
   * Run every statement on one core (max_parallel_workers_per_gather=0), for a pool whose
   * statements must not take the CPU of others: with parallel workers one tenant's broad count
   * keeps every core of a small database server busy (GET /events, bench/api-isolation.ts).
   */
  noParallelWorkers?: boolean;
  /**
   * Send a connection's queries without waiting for each answer (node-postgres pipeline mode), so
   * that statements started together cost one round trip: the ingest reads tenants and targets
   * together, sends the ingest month's lock and check with its insert, and its last statements with the COMMIT
   * (see `inOrder` and inTransaction's `last`).
   * Each query still has its own answer and error. Default false.
   */
  pipeline?: boolean;
}

/**
 * Every connection runs with JIT compilation off. Herald's statements are short key lookups and
 * small batch writes, where compiling costs far more than it saves; and PostgreSQL decides on JIT
 * from estimates, which are largest exactly where they are wrong: a generic plan of `id = ANY($1)`
 * over a large table is estimated at thousands of rows, so the worker's 16-row batch load was
 * compiled at every execution (120 ms of JIT for a 2 ms statement, measured in the full bench).
 */
const NO_JIT = '-c jit=off';

/** The one place that opens a pool (lazily: no connection until the first query). `end()` closes it. */
export function createDatabasePool(databaseUrl: string, options: DatabasePoolOptions = {}): DatabasePool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 5_000,
    ...(options.statementTimeoutMs === undefined ? {} : { statement_timeout: options.statementTimeoutMs }),
    ...(options.idleInTransactionTimeoutMs === undefined ? {} : { idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs }),
    ...(options.applicationName === undefined ? {} : { application_name: options.applicationName }),
    ...(options.pipeline ? { pipeline: true } : {}),
    options: [NO_JIT, options.genericPlans && '-c plan_cache_mode=force_generic_plan', options.noParallelWorkers && '-c max_parallel_workers_per_gather=0']
      .filter(Boolean)
      .join(' '),
  });
  // An idle connection that PostgreSQL closes emits 'error' on the pool; the next query reconnects.
  pool.on('error', () => undefined);
  // A connection PostgreSQL closes while it is checked out (its session ended between two
  // statements of a transaction) emits 'error' on the connection itself, where node-postgres
  // listens only while it is idle: unheard, that event would end the process. The holder's next
  // statement fails instead ("not queryable": database unavailable), and it releases the
  // connection as broken.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

/** Ends a pool, once: a second call (a shutdown racing a failed start) is a no-op. */
export async function closeDatabasePool(pool: DatabasePool): Promise<void> {
  if (!pool.ended) await pool.end();
}

/** Resolves when PostgreSQL answers a trivial query on the pool. */
export async function pingDatabase(pool: DatabasePool): Promise<void> {
  await pool.query('SELECT 1');
}
