import { randomUUID } from 'node:crypto';
import { ingestStore, numberedEvent, type DatabasePool, type NewEvent } from '@herald/db';
import { targetsToNotify, type DeliveryRef, type Event } from '@herald/domain';

/**
 * Stores events and their deliveries (to the targets the routing rule picks, marked enqueued) as
 * the events-api's ingest does, without its checks and without adding any job: for the tests of
 * what comes after the ingest (the worker, the outbox), which cannot import the events-api.
 */
export async function storeEvents(pool: DatabasePool, batch: readonly NewEvent[]): Promise<{ events: Event[]; deliveries: DeliveryRef[] }> {
  return ingestStore(pool).transaction(async (tx) => {
    const { created, storedAt } = await tx.insertNewEvents(batch);
    const { targets } = await tx.findTenantsAndTargets(
      batch.map((b) => b.programId),
      batch.flatMap((b) => (b.merchantId ? [b.merchantId] : [])),
    );
    const deliveries = batch.flatMap(({ event, programId, merchantId }) =>
      targetsToNotify({ programId, merchantId, objectType: event.objectType, eventType: event.eventType }, targets).map((target) => ({
        deliveryId: randomUUID(),
        eventId: event.id,
        targetId: target.id,
        programId,
        merchantId: merchantId ?? null,
        targetOwner: target.merchantId === null ? ('program' as const) : ('merchant' as const),
        storedAt: storedAt.toISOString(),
      })),
    );
    tx.writeAtCommit({ deliveries, counted: batch });
    return {
      events: batch.map(({ event }) => numberedEvent({ ...event, createdAt: new Date(event.createdAt).toISOString() }, created.get(event.id)!)),
      deliveries,
    };
  });
}
