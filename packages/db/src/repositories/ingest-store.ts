import type { DeliveryRef, RoutingTarget } from '@herald/domain';
import type { DatabasePool } from '../pool';
import { inTransaction } from '../sql';
import { insertDeliveries, loadRoutingTargets } from './deliveries';
import { addToCounts } from './event-counts';
import { findTenants, insertNewEvents, loadStoredEvents, type KnownTenants, type NewEvent, type StoredEvent } from './events';

/** The ingest's reads and writes, all bound to one transaction. */
export interface IngestTransaction {
  /** Which of these programs and merchants exist. */
  findTenants(programIds: readonly string[], merchantIds: readonly string[]): Promise<KnownTenants>;
  /** Inserts the events whose id is new, leaves the others alone; returns the ids inserted. */
  insertNewEvents(batch: readonly NewEvent[]): Promise<Set<string>>;
  /** The stored events with these ids, with their content hashes. */
  loadStoredEvents(eventIds: readonly string[]): Promise<Map<string, StoredEvent>>;
  /** The targets of these programs and merchants, for the routing rule. */
  loadRoutingTargets(programIds: readonly string[], merchantIds: readonly string[]): Promise<RoutingTarget[]>;
  /** Stores deliveries already marked enqueued (their jobs are added after the commit). */
  insertDeliveries(refs: readonly DeliveryRef[]): Promise<void>;
  /** Adds the events to the list counters. */
  addToCounts(events: readonly NewEvent[]): Promise<void>;
}

/** Runs the ingest of one batch in one transaction: committed when `work` resolves, rolled back when it throws. */
export function ingestStore(pool: DatabasePool) {
  return {
    transaction<T>(work: (tx: IngestTransaction) => Promise<T>): Promise<T> {
      return inTransaction(pool, (sql) =>
        work({
          findTenants: (programIds, merchantIds) => findTenants(sql, programIds, merchantIds),
          insertNewEvents: (batch) => insertNewEvents(sql, batch),
          loadStoredEvents: (eventIds) => loadStoredEvents(sql, eventIds),
          loadRoutingTargets: (programIds, merchantIds) => loadRoutingTargets(sql, programIds, merchantIds),
          insertDeliveries: (refs) => insertDeliveries(sql, refs),
          addToCounts: (events) =>
            addToCounts(
              sql,
              events.map(({ event, programId, merchantId }) => ({
                programId,
                ...(merchantId === undefined ? {} : { merchantId }),
                origin: event.origin,
                objectType: event.objectType,
                createdAt: new Date(event.createdAt),
              })),
            ),
        }),
      );
    },
  };
}

export type IngestStore = ReturnType<typeof ingestStore>;
