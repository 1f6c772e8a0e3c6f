import type { DeliveryRef } from '@herald/domain';

/**
 * The BullMQ queue holding one job per delivery (event x notification target). A job's payload is
 * the delivery's DeliveryRef (@herald/domain): ids only, so no secret and no merchant data ever
 * sits in Redis; the worker trusts only the database.
 */
export const DELIVERIES_QUEUE = 'deliveries';

/**
 * A delivery job's data: the delivery's DeliveryRef and, when the enqueue was traced, the W3C
 * `traceparent` of its enqueue span, so that the worker's spans join the ingest's trace. Ids only,
 * there too: a traceparent is a trace id, a span id and a flag.
 */
export type DeliveryJobData = DeliveryRef & { traceparent?: string };
