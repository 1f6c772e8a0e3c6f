import type { ApiConfig } from '@herald/config';
import { closeDatabasePool, createDatabasePool, type DatabasePool } from '@herald/db';

/**
 * The events-api's connections to PostgreSQL: one pool per class of work, each with its own size
 * and statement time limit, so that a class that is slow or saturated (one key's expensive GET
 * /events, an operator's broad history query) waits on its own connections and never takes those
 * of the ingest or of /readyz.
 */
export interface ApiDatabases {
  /** GET /events. */
  merchantReads: DatabasePool;
  /** The ingest, its outbox and the API-key lookups of GET /events. */
  ingest: DatabasePool;
  /** The admin API. */
  admin: DatabasePool;
  /** /readyz: a single connection, limited to READINESS_TIMEOUT_MS. */
  readiness: DatabasePool;
}

export interface ApiDatabasesOptions {
  /** How long a query waits for a free connection of its pool or for PostgreSQL to answer a connect. Default 5000. */
  connectionTimeoutMs?: number;
}

/**
 * How long an ingest transaction may wait for its own process between two statements before
 * PostgreSQL ends it. Every ingest holds the ingest month's lock shared until it ends, and at the
 * turn of a month every other ingest waits for them all (packages/db insertNewEvents): an events-api
 * process that stops mid-transaction (frozen, or its machine gone) must not hold them back for
 * longer than this. An ingest's own gaps are its synchronous work between round trips, milliseconds.
 */
export const INGEST_IDLE_IN_TRANSACTION_TIMEOUT_MS = 5_000;

/** Opens (lazily: no connection until the first query) every pool of the events-api. */
export function createApiDatabases(
  config: Pick<ApiConfig, 'databaseUrl' | 'queryClasses' | 'readinessTimeoutMs'>,
  options: ApiDatabasesOptions = {},
): ApiDatabases {
  const { merchantReads, ingest, admin } = config.queryClasses;
  const pool = (
    name: string,
    maxConnections: number,
    statementTimeoutMs: number,
    more: { noParallelWorkers?: boolean; pipeline?: boolean; idleInTransactionTimeoutMs?: number } = {},
  ): DatabasePool =>
    createDatabasePool(config.databaseUrl, {
      maxConnections,
      statementTimeoutMs,
      ...more,
      applicationName: `herald-api:${name}`,
      ...(options.connectionTimeoutMs === undefined ? {} : { connectionTimeoutMs: options.connectionTimeoutMs }),
    });
  return {
    // One core per merchant read: the turns of expensive reads (EVENTS_EXPENSIVE_CONCURRENCY) then bound their CPU.
    merchantReads: pool('merchant-reads', merchantReads.poolSize, merchantReads.statementTimeoutMs, { noParallelWorkers: true }),
    // Pipelined: an ingest's counter updates and its COMMIT travel in one round trip (ingest-store.ts).
    ingest: pool('ingest', ingest.poolSize, ingest.statementTimeoutMs, { pipeline: true, idleInTransactionTimeoutMs: INGEST_IDLE_IN_TRANSACTION_TIMEOUT_MS }),
    admin: pool('admin', admin.poolSize, admin.statementTimeoutMs),
    readiness: pool('readiness', 1, config.readinessTimeoutMs),
  };
}

/** Ends every pool. */
export async function closeApiDatabases(databases: ApiDatabases): Promise<void> {
  await Promise.allSettled(Object.values(databases).map((pool: DatabasePool) => closeDatabasePool(pool)));
}
