/**
 * A delivery (one event to one notification target) as the outbox, the queue and the worker pass
 * it around: ids only, never content or credentials, so nothing secret or personal sits in Redis.
 * The worker trusts only `deliveryId` and loads the rest from the database; the other ids are there
 * for the people reading the queue dashboard and the logs.
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
}
