/**
 * The events-api's bounds on the database work of one request and on the connections of each
 * class of work, so that no single API key can take PostgreSQL from the other tenants, from the
 * ingest or from /readyz.
 */
import { ConfigError } from './config-error';
import { integer, type Env } from './parsers';

/** One class of queries: its own connection pool, and how long any of its statements may run. */
export interface QueryClassConfig {
  /** Connections of the class's own pool. */
  readonly poolSize: number;
  /** PostgreSQL cancels a statement of this class that runs longer (statement_timeout of its connections). */
  readonly statementTimeoutMs: number;
}

/**
 * The events-api's connection pools, one per class of work: a class that is slow or saturated
 * waits on its own connections only. /readyz has one more pool of a single connection, whose
 * statement time limit is READINESS_TIMEOUT_MS.
 */
export interface QueryClassesConfig {
  /**
   * GET /events. MERCHANT_READS_POOL_SIZE (2 to 100, default 6) and MERCHANT_READS_STATEMENT_TIMEOUT_MS
   * (100 to 600000, default 2000).
   */
  readonly merchantReads: QueryClassConfig;
  /**
   * The ingest, its outbox and the API-key lookups of GET /events. INGEST_POOL_SIZE (1 to 100,
   * default 6) and INGEST_STATEMENT_TIMEOUT_MS (100 to 600000, default 10000).
   */
  readonly ingest: QueryClassConfig;
  /**
   * The admin API (tenants, keys, targets, delivery history and replays). ADMIN_POOL_SIZE (1 to 100,
   * default 2) and ADMIN_STATEMENT_TIMEOUT_MS (100 to 600000, default 30000).
   */
  readonly admin: QueryClassConfig;
}

/** How much work one GET /events may cause, and how many of one key's run at once. */
export interface EventsListLimits {
  /**
   * EVENTS_MAX_SKIP: most events a page may skip ((page - 1) x pageSize) when the query filters
   * on eventType or objectId, whose pages are found by skipping; deeper pages are refused with a
   * 400 naming `page`. Pages under the other filters (origin, objectType, createdFrom, createdTo)
   * are found through the counters and are not bounded. 100 to 1000000. Default 10000.
   */
  readonly maxSkip: number;
  /**
   * EVENTS_CONCURRENCY_PER_KEY: expensive GET /events of one API key (filtering on eventType or
   * objectId: they count and skip over the index) that query the database at once, per events-api
   * process; the others are not limited (they read a few counter rows). At most
   * EVENTS_EXPENSIVE_CONCURRENCY, so one key leaves turns to others. Default 1.
   */
  readonly concurrencyPerKey: number;
  /**
   * EVENTS_EXPENSIVE_CONCURRENCY: expensive GET /events of all keys together that query the
   * database at once, per events-api process. Each keeps one PostgreSQL core busy for as long as
   * it runs, so this is sized to leave cores to everyone's cheap reads and to the ingest (across
   * processes: the sum of theirs below the database's cores). Below MERCHANT_READS_POOL_SIZE, so
   * cheap reads always find connections. Default 2 (or MERCHANT_READS_POOL_SIZE - 1 when smaller).
   */
  readonly concurrencyTotal: number;
  /**
   * EVENTS_EXPENSIVE_MS_PER_SECOND: milliseconds of expensive GET /events one API key may run per
   * second on average, per process (a bucket saving up to MERCHANT_READS_STATEMENT_TIMEOUT_MS, so
   * any one read fits); past it, a read waits up to EVENTS_QUEUE_WAIT_MS for the budget to refill,
   * then gets 429 query_time_exceeded with Retry-After. One read at a time
   * still keeps a PostgreSQL core busy without pause: this leaves the core to the other tenants
   * the rest of the time. 0 turns it off. 0 to 60000. Default 500.
   */
  readonly msPerSecondPerKey: number;
  /**
   * EVENTS_QUEUE_WAIT_MS: how long an expensive GET /events over its key's concurrency waits for a turn
   * before it is refused with a 429; 0 refuses at once. 0 to 60000. Default 1000.
   */
  readonly queueWaitMs: number;
}

const DEFAULT_CONCURRENCY_PER_KEY = 1;
// Measured on 2 cores (bench/api-isolation.ts): one key's expensive reads, at most this many at
// once, leave another tenant's page-1 p99 within its 250 ms target.
const DEFAULT_EXPENSIVE_CONCURRENCY = 2;

export function readQueryClasses(env: Env): QueryClassesConfig {
  return {
    merchantReads: {
      poolSize: integer(env, 'MERCHANT_READS_POOL_SIZE', 6, 2, 100),
      statementTimeoutMs: integer(env, 'MERCHANT_READS_STATEMENT_TIMEOUT_MS', 2_000, 100, 600_000),
    },
    ingest: {
      poolSize: integer(env, 'INGEST_POOL_SIZE', 6, 1, 100),
      statementTimeoutMs: integer(env, 'INGEST_STATEMENT_TIMEOUT_MS', 10_000, 100, 600_000),
    },
    admin: {
      poolSize: integer(env, 'ADMIN_POOL_SIZE', 2, 1, 100),
      statementTimeoutMs: integer(env, 'ADMIN_STATEMENT_TIMEOUT_MS', 30_000, 100, 600_000),
    },
  };
}

export function readEventsListLimits(env: Env, merchantReadsPoolSize: number): EventsListLimits {
  const most = merchantReadsPoolSize - 1;
  const concurrencyTotal = integer(env, 'EVENTS_EXPENSIVE_CONCURRENCY', Math.min(DEFAULT_EXPENSIVE_CONCURRENCY, most), 1, 100);
  if (concurrencyTotal > most) {
    throw new ConfigError(
      'EVENTS_EXPENSIVE_CONCURRENCY',
      `must be below MERCHANT_READS_POOL_SIZE (${merchantReadsPoolSize}), so that cheap reads always find connections, got ${concurrencyTotal}`,
    );
  }
  const concurrencyPerKey = integer(env, 'EVENTS_CONCURRENCY_PER_KEY', Math.min(DEFAULT_CONCURRENCY_PER_KEY, concurrencyTotal), 1, 100);
  if (concurrencyPerKey > concurrencyTotal) {
    throw new ConfigError('EVENTS_CONCURRENCY_PER_KEY', `must be at most EVENTS_EXPENSIVE_CONCURRENCY (${concurrencyTotal}), got ${concurrencyPerKey}`);
  }
  return {
    maxSkip: integer(env, 'EVENTS_MAX_SKIP', 10_000, 100, 1_000_000),
    concurrencyPerKey,
    concurrencyTotal,
    msPerSecondPerKey: integer(env, 'EVENTS_EXPENSIVE_MS_PER_SECOND', 500, 0, 60_000),
    queueWaitMs: integer(env, 'EVENTS_QUEUE_WAIT_MS', 1_000, 0, 60_000),
  };
}
