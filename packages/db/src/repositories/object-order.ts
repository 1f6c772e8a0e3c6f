import { isUuid } from '@herald/domain';
import type { DatabasePool } from '../pool';
import { rawStatement, run, sql } from '../sql';
import { storedRange, storedWithin, type StoredRange } from '../stored-range';

// The statements of ordered delivery (a target with ordering `object`): each object's callbacks
// to such a target go one after the other, in the sequence order of its events. The rule (wait for
// the nearest earlier delivery of the same object that has no final outcome; a final outcome lets
// the next one go) is the delivery worker's (services/delivery-worker object-order.ts); these only
// find and mark rows.
//
// An object's chain to a target is read through its events (events(object_id, object_type,
// sequence)) and each event's delivery to the target (deliveries(event_id, target_id, created_at)):
// a delivery is stored with or after its event, so `created_at >= ingested_at` leaves out the
// weeks of deliveries before the event.

/**
 * Events (`pe`) with their deliveries (`pd`), each event's found by their unique key
 * (event_id, target_id, created_at) by the event alone: OFFSET 0 keeps the target and status
 * conditions out of the subquery, where PostgreSQL may otherwise scan the target's pending
 * deliveries instead, which a backlog makes long.
 */
const EVENTS_WITH_DELIVERIES = sql`events pe
CROSS JOIN LATERAL (
  SELECT pd.id, pd.target_id, pd.status, pd.waiting_for FROM deliveries pd
  WHERE pd.event_id = pe.id AND pd.created_at >= pe.ingested_at
  OFFSET 0
) pd`;

/** `pe` of the same object as `d`'s event `e`, and `pd` its pending delivery to `d`'s target. */
const PENDING_OF_SAME_OBJECT = sql`pe.object_id = e.object_id AND pe.object_type = e.object_type AND pe.program_id = e.program_id
    AND pe.merchant_id IS NOT DISTINCT FROM e.merchant_id AND pd.target_id = d.target_id AND pd.status = 'pending'`;

/** Each delivery's event (`e`), by the delivery's event id: newest month first, like the worker's load. */
const EVENT_OF_D = sql`JOIN LATERAL (SELECT * FROM events WHERE events.id = d.event_id ORDER BY events.ingested_at DESC LIMIT 1) e ON true`;

export const objectOrderQueries = {
  /** The nearest earlier delivery of the same object to the same target that is still pending. */
  predecessor: (deliveryId: string, stored: StoredRange) =>
    rawStatement(sql<{ id: string }>`SELECT p.id
FROM deliveries d ${EVENT_OF_D}
CROSS JOIN LATERAL (
  SELECT pd.id FROM ${EVENTS_WITH_DELIVERIES}
  WHERE ${PENDING_OF_SAME_OBJECT} AND pe.sequence < e.sequence
  ORDER BY pe.sequence DESC
  LIMIT 1
) p
WHERE d.id = ${deliveryId}::uuid AND ${storedWithin('d.created_at', stored)}`),

  /** Whether a delivery is still pending (by id: every week's partition, each probed by its index). */
  pending: (deliveryId: string) =>
    rawStatement(sql<{ pending: boolean }>`SELECT EXISTS (SELECT 1 FROM deliveries WHERE id = ${deliveryId}::uuid AND status = 'pending') AS pending`),

  /** Marks a delivery as waiting for `predecessorId`: a deferral of reason `awaiting_predecessor` (no attempt spent). */
  markWaiting: (v: { deliveryId: string; predecessorId: string; at: Date } & StoredRange) =>
    rawStatement(sql<never>`UPDATE deliveries AS d
SET waiting_for = ${v.predecessorId}::uuid, deferrals = d.deferrals + 1, last_deferred_at = ${v.at}::timestamptz, last_deferral_reason = 'awaiting_predecessor'
WHERE d.id = ${v.deliveryId}::uuid AND ${storedWithin('d.created_at', v)}`),

  /**
   * For each of `ids` (deliveries whose final outcome was just recorded): the nearest later pending
   * delivery of its object to its target, when it is marked waiting for it: its job may go now.
   * (Only the nearest: a later one waits for that one. One marked for an earlier delivery that a
   * replay made pending again meanwhile is woken by the reconciler's orphaned waits.)
   */
  waitingFor: (ids: readonly string[], stored: StoredRange) =>
    rawStatement(sql<{ id: string; waiting_for: string }>`SELECT s.id, s.waiting_for
FROM deliveries d ${EVENT_OF_D}
CROSS JOIN LATERAL (
  SELECT pd.id, pd.waiting_for FROM ${EVENTS_WITH_DELIVERIES}
  WHERE ${PENDING_OF_SAME_OBJECT} AND pe.sequence > e.sequence
  ORDER BY pe.sequence
  LIMIT 1
) s
WHERE d.id = ANY(${ids}::uuid[]) AND ${storedWithin('d.created_at', stored)} AND s.waiting_for = d.id`),

  /**
   * Pending deliveries still marked waiting for a delivery that has its final outcome (or is gone):
   * their wake-up was lost (the worker that recorded the predecessor's outcome stopped before it
   * woke them). Oldest first, at most `limit`.
   */
  orphanedWaits: (limit: number) =>
    rawStatement(sql<{ id: string }>`SELECT d.id
FROM deliveries d
WHERE d.status = 'pending' AND d.waiting_for IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM deliveries p WHERE p.id = d.waiting_for AND p.status = 'pending')
ORDER BY d.created_at
LIMIT ${limit}`),
};

/** A delivery as ordering looks it up: its id and when it was stored (its partition). */
export interface OrderedDelivery {
  deliveryId: string;
  /** The delivery's created_at (its job's storedAt); unknown: every week's partition is read. */
  storedAt?: Date;
}

// The worker's statements run as named prepared statements (planned once per pooled connection):
// planning one over every partition of events and deliveries costs more than running it.
export function objectOrderRepository(pool: DatabasePool) {
  return {
    /** The delivery's nearest earlier pending delivery of the same object to the same target; null when none. */
    async predecessor(delivery: OrderedDelivery): Promise<string | null> {
      if (!isUuid(delivery.deliveryId)) return null;
      const { rows } = await run(pool, objectOrderQueries.predecessor(delivery.deliveryId, storedRange([delivery.storedAt])), {
        prepared: 'order-predecessor',
      });
      return rows[0]?.id ?? null;
    },

    /** Marks the delivery waiting for `predecessorId` (and counts it as a deferral). */
    async markWaiting(delivery: OrderedDelivery, predecessorId: string, at: Date): Promise<void> {
      await run(pool, objectOrderQueries.markWaiting({ deliveryId: delivery.deliveryId, predecessorId, at, ...storedRange([delivery.storedAt]) }), {
        prepared: 'order-mark-waiting',
      });
    },

    /** Whether the delivery has no final outcome yet. */
    async isPending(deliveryId: string): Promise<boolean> {
      if (!isUuid(deliveryId)) return false;
      const { rows } = await run(pool, objectOrderQueries.pending(deliveryId), { prepared: 'order-pending' });
      return rows[0]?.pending === true;
    },

    /**
     * The deliveries waiting for these ones (whose final outcome is recorded), by the delivery
     * each waits for.
     */
    async waitingFor(deliveries: readonly OrderedDelivery[]): Promise<Map<string, string[]>> {
      const ids = deliveries.map((d) => d.deliveryId).filter((id) => isUuid(id));
      const waiting = new Map<string, string[]>();
      if (ids.length === 0) return waiting;
      const { rows } = await run(pool, objectOrderQueries.waitingFor(ids, storedRange(deliveries.map((d) => d.storedAt))), { prepared: 'order-waiting-for' });
      for (const row of rows) waiting.set(row.waiting_for, [...(waiting.get(row.waiting_for) ?? []), row.id]);
      return waiting;
    },

    /** Up to `limit` pending deliveries whose predecessor has its outcome but which still wait (see objectOrderQueries.orphanedWaits). */
    async orphanedWaits(limit: number): Promise<string[]> {
      const { rows } = await run(pool, objectOrderQueries.orphanedWaits(limit));
      return rows.map((row) => row.id);
    },
  };
}

export type ObjectOrderRepository = ReturnType<typeof objectOrderRepository>;
