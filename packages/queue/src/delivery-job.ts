/**
 * The BullMQ queue holding one job per delivery (event x notification target). A job's payload is
 * the delivery's DeliveryRef (@herald/domain): ids only, so no secret and no merchant data ever
 * sits in Redis; the worker trusts only the database.
 */
export const DELIVERIES_QUEUE = 'deliveries';
