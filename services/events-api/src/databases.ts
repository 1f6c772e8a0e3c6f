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

/** Opens (lazily: no connection until the first query) every pool of the events-api. */
export function createApiDatabases(config: Pick<ApiConfig, 'databaseUrl' | 'queryClasses' | 'readinessTimeoutMs'>, options: ApiDatabasesOptions = {}): ApiDatabases {
  const { merchantReads, ingest, admin } = config.queryClasses;
  const pool = (name: string, maxConnections: number, statementTimeoutMs: number, more: { noParallelWorkers?: boolean; pipeline?: boolean } = {}): DatabasePool =>
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
    ingest: pool('ingest', ingest.poolSize, ingest.statementTimeoutMs, { pipeline: true }),
    admin: pool('admin', admin.poolSize, admin.statementTimeoutMs),
    readiness: pool('readiness', 1, config.readinessTimeoutMs),
  };
}

/** Ends every pool. */
export async function closeApiDatabases(databases: ApiDatabases): Promise<void> {
  await Promise.allSettled(Object.values(databases).map((pool: DatabasePool) => closeDatabasePool(pool)));
}
