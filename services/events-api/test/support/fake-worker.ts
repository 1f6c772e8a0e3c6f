import { randomUUID } from 'node:crypto';
import { UnrecoverableError, Worker } from 'bullmq';
import { credentialsCipherFromConfig, deliveryAttemptRepository, type NewDeliveryAttempt } from '@herald/db';
import type { DeliveryRef } from '@herald/domain';
import { createRedisConnection, DELIVERIES_QUEUE } from '@herald/queue';
import type { TestApi } from './api';

/** How the fake worker ends one delivery's attempt: `retrying` fails it and BullMQ delays the job by RETRY_DELAY_MS. */
export type FakeAttempt = { outcome: 'succeeded' | 'failed' | 'retrying' } & Partial<NewDeliveryAttempt>;

/** The backoff of the fake worker's retries. */
export const RETRY_DELAY_MS = 60_000;

/**
 * Stands in for the delivery worker (which the events-api may not import) in tests of the history
 * and replay API: takes every waiting job, records one attempt through the worker's own
 * repository, and completes or fails the job for good, as the worker does after its last try.
 */
export function createFakeWorker(api: TestApi) {
  const connection = createRedisConnection(api.config.redisUrl, { role: 'worker' });
  const worker = new Worker<DeliveryRef>(DELIVERIES_QUEUE, null, {
    connection,
    prefix: api.config.queuePrefix,
    autorun: false,
    settings: { backoffStrategy: () => RETRY_DELAY_MS },
  });
  const attempts = deliveryAttemptRepository(api.databases.ingest, credentialsCipherFromConfig(api.config));

  return {
    /** Works every waiting job; `attemptOf` says how each delivery's attempt ends. Returns the delivery ids worked. */
    async runAll(attemptOf: (data: DeliveryRef) => FakeAttempt): Promise<string[]> {
      const worked: string[] = [];
      for (;;) {
        const token = randomUUID();
        const job = await worker.getNextJob(token, { block: false });
        if (!job) return worked;
        const { outcome, ...fields } = attemptOf(job.data);
        const attempt: NewDeliveryAttempt = {
          startedAt: new Date(),
          durationMs: 12,
          ...(outcome === 'succeeded'
            ? { statusCode: 200, responseBody: 'ok' }
            : { statusCode: 500, errorKind: 'http_status', errorMessage: 'the target answered HTTP 500' }),
          ...fields,
        };
        const [recorded] = await attempts.recordAttempts([{ deliveryId: job.data.deliveryId, attempt, outcome: outcome === 'retrying' ? 'pending' : outcome }]);
        if (outcome === 'succeeded') await job.moveToCompleted({ outcome: 'delivered', attempt: recorded?.number }, token, false);
        // A retry: BullMQ delays the job by the backoff, as after a failed attempt of the worker.
        else if (outcome === 'retrying') await job.moveToFailed(new Error(attempt.errorMessage ?? 'failed'), token, false);
        // Unrecoverable: failed for good whatever attempts the job has left, like a last try.
        else await job.moveToFailed(new UnrecoverableError(attempt.errorMessage ?? 'failed'), token, false);
        worked.push(job.data.deliveryId);
      }
    },
    async close(): Promise<void> {
      await worker.close();
      connection.disconnect();
    },
  };
}
