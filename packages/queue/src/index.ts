/**
 * What the events-api (producer) and the delivery-worker (consumer) share about the queue: its
 * name, its job payload, and how to connect. One module, so the two sides cannot drift apart.
 */
export { DELIVERIES_QUEUE } from './delivery-job';
export {
  createDeliveryProducer,
  createDeliveryQueue,
  deliveryJobOptions,
  removeFinishedJobs,
  type DeliveryProducer,
  type DeliveryQueue,
  type JobSlot,
  type RetryPolicy,
} from './delivery-queue';
export { createRedisConnection, pingRedis, type RedisConnectionOptions } from './redis';
export {
  DELIVERY_BACKOFF_TYPE,
  deliveryBackoffStrategy,
  exponentialBackoffMs,
  type DeliveryBackoffPolicy,
  type RetryAfterHint,
} from './delivery-backoff';
export * from './target-gate';
