import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { DELIVERIES_QUEUE, type DeliveryJobData } from './delivery-job';

/** How failed callbacks are retried: BullMQ's own attempts and exponential backoff. */
export interface RetryPolicy {
  /** Total tries of a callback, the first included. */
  attempts: number;
  /** Delay before the first retry; each later retry waits twice as long as the one before. */
  backoffDelayMs: number;
  /** Share of each delay drawn at random (0 to 1), so retries of many callbacks do not arrive in step. */
  backoffJitter: number;
  /** How long finished jobs stay visible in the dashboard, in seconds. */
  keepCompletedSeconds: number;
  /** How long failed jobs (every attempt used) stay for ops to inspect and retry, in seconds. */
  keepFailedSeconds: number;
}

export type DeliveryQueue = Queue<DeliveryJobData, unknown, string>;

/** The deliveries queue on a connection (a `client`-role one for producers, so enqueue fails fast). */
export function createDeliveryQueue(connection: Redis, prefix: string): DeliveryQueue {
  return new Queue<DeliveryJobData, unknown, string>(DELIVERIES_QUEUE, { connection, prefix });
}

/** The job options that carry the retry policy. */
export function deliveryJobOptions(policy: RetryPolicy): JobsOptions {
  return {
    attempts: policy.attempts,
    backoff: { type: 'exponential', delay: policy.backoffDelayMs, jitter: policy.backoffJitter },
    removeOnComplete: { age: policy.keepCompletedSeconds },
    removeOnFail: { age: policy.keepFailedSeconds },
  };
}

/** Adds delivery jobs; rejects at once while Redis is unreachable, and after `timeoutMs` at most. */
export interface DeliveryProducer {
  readonly queue: DeliveryQueue;
  enqueue(jobs: readonly DeliveryJobData[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * The producer side of the deliveries queue, for the events-api and the sweeper. It never waits
 * for Redis: callers hold database work open (the sweeper a transaction, the API a response),
 * and a delivery that could not be enqueued stays in the outbox for the next sweep.
 */
export function createDeliveryProducer(connection: Redis, options: { prefix: string; retry: RetryPolicy; timeoutMs: number }): DeliveryProducer {
  const queue = createDeliveryQueue(connection, options.prefix);
  const opts = deliveryJobOptions(options.retry);
  return {
    queue,
    async enqueue(jobs) {
      if (jobs.length === 0) return;
      if (connection.status !== 'ready') throw new Error(`Redis is not connected (${connection.status})`);
      // One round trip for the whole batch. The job id is the delivery id, so adding a delivery
      // that is already queued (the sweeper racing the API, a retried enqueue) is a no-op.
      const added = queue.addBulk(jobs.map((data) => ({ name: jobName(data), data, opts: { ...opts, jobId: data.deliveryId } })));
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`enqueue took over ${options.timeoutMs} ms`)), options.timeoutMs);
      });
      try {
        await Promise.race([added, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => queue.close(),
  };
}

/** A name that tells ops in the dashboard what the job is, with no secret in it. */
function jobName(job: DeliveryJobData): string {
  return `${job.eventId} -> ${job.merchantId ? `merchant ${job.merchantId}` : `program ${job.programId}`}`;
}
