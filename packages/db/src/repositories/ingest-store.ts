import type { DeliveryRef, RoutingTarget } from '@herald/domain';
import type { DatabasePool } from '../pool';
import { inOrder, inTransaction } from '../sql';
import { deliveryQueries, loadRoutingTargets } from './deliveries';
import { countsStatement } from './event-counts';
import {
  advanceIngestMonth,
  findTenants,
  IngestMonthTurnedError,
  IngestRaceError,
  insertNewEvents,
  loadStoredEvents,
  type KnownTenants,
  type StoredEvent,
} from './event-ingest';
import type { NewEvent } from './event-ingest-statements';

/** The ingest's reads and writes, all bound to one transaction. */
export interface IngestTransaction {
  /**
   * Which of these programs and merchants exist, and their targets (for the routing rule): one
   * round trip on a pool that pipelines, as the events-api's ingest pool does.
   */
  findTenantsAndTargets(programIds: readonly string[], merchantIds: readonly string[]): Promise<{ known: KnownTenants; targets: RoutingTarget[] }>;
  /**
   * Inserts the events whose id is new, leaves the others alone; returns the ids inserted with
   * their sequence numbers, and when the transaction stores its rows (their ingested_at and its
   * deliveries' created_at).
   */
  insertNewEvents(batch: readonly NewEvent[]): Promise<{ created: Map<string, number>; storedAt: Date }>;
  /** The stored events with these ids, with their content hashes. */
  loadStoredEvents(eventIds: readonly string[]): Promise<Map<string, StoredEvent>>;
  /**
   * The transaction's last writes, made when the work has resolved, with the COMMIT: stores the
   * deliveries (already marked enqueued: their jobs are added after the commit) and adds the events
   * to the list counters. Call at most once. Every ingest of a program updates the same counter
   * rows, so concurrent ingests of a program queue for their row locks: sent with the COMMIT in one
   * round trip, those locks are held only while PostgreSQL updates the rows and flushes the commit,
   * never while this process is between two round trips.
   */
  writeAtCommit(writes: { deliveries: readonly DeliveryRef[]; counted: readonly NewEvent[] }): void;
}

/**
 * How many times an ingest runs its transaction when it keeps finding the month turned, or a
 * concurrent ingest of one of its ids: once more is enough unless the database's clock steps back
 * and forth across the month, or the same ids keep arriving from several producers at once. Past
 * that, the ingest fails as database unavailable (503, retry later), with nothing stored.
 */
const INGEST_TRIES = 3;

/**
 * Runs the ingest of one batch in one transaction: committed when `work` resolves, rolled back
 * when it throws. At the turn of a month the transaction runs again, `work` included, once the
 * ingest month has advanced (insertNewEvents); nothing of the first run was kept.
 */
export function ingestStore(pool: DatabasePool) {
  const once = <T>(work: (tx: IngestTransaction) => Promise<T>): Promise<T> => {
    let last: { deliveries: readonly DeliveryRef[]; counted: readonly NewEvent[] } | undefined;
    return inTransaction(
      pool,
      (sql) =>
        work({
          findTenantsAndTargets: async (programIds, merchantIds) => {
            const [known, targets] = await inOrder<[KnownTenants, RoutingTarget[]]>(sql, [
              () => findTenants(sql, programIds, merchantIds),
              () => loadRoutingTargets(sql, programIds, merchantIds),
            ]);
            return { known, targets };
          },
          insertNewEvents: (batch) => insertNewEvents(sql, batch),
          loadStoredEvents: (eventIds) => loadStoredEvents(sql, eventIds),
          writeAtCommit: (writes) => {
            if (last) throw new Error('writeAtCommit: the last writes are already given');
            last = writes;
          },
        }),
      {
        last: () => {
          if (!last) return [];
          const counts = countsStatement(
            last.counted.map(({ event, programId, merchantId }) => ({
              programId,
              ...(merchantId === undefined ? {} : { merchantId }),
              origin: event.origin,
              objectType: event.objectType,
              createdAt: new Date(event.createdAt),
            })),
          );
          return [...(last.deliveries.length > 0 ? [deliveryQueries.insert(last.deliveries)] : []), ...(counts ? [counts] : [])];
        },
      },
    );
  };
  return {
    async transaction<T>(work: (tx: IngestTransaction) => Promise<T>): Promise<T> {
      for (let tries = 1; ; tries += 1) {
        try {
          return await once(work);
        } catch (error) {
          if (!(error instanceof IngestMonthTurnedError || error instanceof IngestRaceError) || tries === INGEST_TRIES) throw error;
          if (error instanceof IngestMonthTurnedError) await advanceIngestMonth(pool);
        }
      }
    },
  };
}
