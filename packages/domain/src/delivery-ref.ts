/**
 * A delivery (one event to one notification target) as the outbox, the queue and the worker pass
 * it around: ids only, never content or credentials, so nothing secret or personal sits in Redis.
 * The worker trusts only `deliveryId` and loads the rest from the database (`storedAt` only narrows
 * where it looks); the other ids are there for the people reading the queue dashboard and the logs.
 */
export interface DeliveryRef {
  deliveryId: string;
  eventId: string;
  targetId: string;
  programId: string;
  /** The event's merchant; null for an event of the program as a whole. */
  merchantId: string | null;
  /**
   * Whose target it is: the program's own (owner programId) or the event's merchant's (owner
   * merchantId). An event of a merchant may go to both, so the dashboard names jobs by it.
   */
  targetOwner: 'program' | 'merchant';
  /**
   * When the ingest stored the delivery and its event, as an ISO 8601 time: both rows are written
   * by one transaction at its `now()` (the delivery's created_at, the event's ingested_at), the
   * keys of their time partitions. With it the worker reads one week's and one month's partition
   * for a delivery instead of every partition kept. Absent on jobs queued before it was carried:
   * those are read from every partition.
   */
  storedAt?: string;
}

/** A ref's `storedAt` as a time; undefined when absent or not a time (a job written by hand), which the worker then looks for in every partition. */
export function storedAtOf(ref: Pick<DeliveryRef, 'storedAt'>): Date | undefined {
  if (ref.storedAt === undefined) return undefined;
  const at = new Date(ref.storedAt);
  return Number.isNaN(at.getTime()) ? undefined : at;
}
