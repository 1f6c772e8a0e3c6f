/**
 * What the events-api (producer) and the delivery-worker (consumer) share about the queue: its
 * name, its job payload, and how to connect. One module, so the two sides cannot drift apart.
 */
export { DELIVERIES_QUEUE, type DeliveryJobData } from './delivery-job';
export {
  ADD_CHUNK_JOBS,
  createDeliveryProducer,
  createDeliveryQueue,
  fairShareKey,
  wakeParkedJobs,
  type DeliveryProducer,
  type DeliveryQueue,
  type JobSlot,
  type RetryPolicy,
} from './delivery-queue';
export { createRedisConnection, pingRedis, scanKeys, type RedisConnection, type RedisConnectionOptions } from './redis';
export {
  DELIVERY_BACKOFF_TYPE,
  deliveryBackoffStrategy,
  exponentialBackoffMs,
  type DeliveryBackoffPolicy,
  type RetryAfterHint,
} from './delivery-backoff';
export { createFairShare, MAX_PRIORITY, type FairShareJob, type FairShareOptions } from './delivery-queue';
export * from './target-gate';
export { createCoalescer, type CoalescedCall, type CoalescerOptions } from './coalescer';
