/** The BullMQ queue holding one job per delivery (event x notification target). */
export const DELIVERIES_QUEUE = 'deliveries';

/**
 * Payload of a delivery job. Ids only: the worker loads the event and the target (with its
 * credentials) from PostgreSQL, so no secret and no merchant data ever sits in Redis.
 */
export interface DeliveryJobData {
  deliveryId: string;
  /** The rest is for people reading the dashboard; the worker trusts only the database. */
  eventId: string;
  targetId: string;
  programId: string;
  merchantId: string | null;
}
