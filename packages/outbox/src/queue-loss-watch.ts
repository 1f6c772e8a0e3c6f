import { randomBytes } from 'node:crypto';
import type { DeliveryQueue, RedisConnection } from '@herald/queue';
import type { OutboxLogger } from './outbox-logger';
import { startPeriodicRunner } from '@herald/lifecycle';

export interface QueueLossWatchDependencies {
  /** A fail-fast connection: while Redis is down a check fails at once, and the next one tries again. */
  redis: RedisConnection;
  /** The queue whose loss is watched: the marker lives among its keys. */
  queue: Pick<DeliveryQueue, 'qualifiedName'>;
  /** RECONCILER_LOSS_CHECK_MS: how often the marker is checked. */
  intervalMs: number;
  /** Told when the marker is gone or replaced, with when this process noticed (ms). */
  onLoss(noticedAt: number): void;
  logger: Pick<OutboxLogger, 'warn'>;
  /** The clock, in milliseconds (tests pass their own). Default `Date.now`. */
  now?: () => number;
}

export interface QueueLossWatch {
  /** Stops the checks and waits for the one in flight. */
  stop(): Promise<void>;
}

/**
 * Notices within `intervalMs` that Redis lost the queue (restarted empty, flushed, the queue's keys
 * removed), instead of waiting for the reconciler to find the orphaned deliveries stale. A marker
 * key with a random value lives among the queue's keys: each check creates it if it is missing
 * (SET NX) and reads it. The first value a process reads is the one it expects; a different value
 * later means the marker, and so the queue, was gone in between, whichever worker re-created it.
 * A marker evicted by a memory policy is a false alarm, which costs one full reconciliation.
 */
export function startQueueLossWatch(deps: QueueLossWatchDependencies): QueueLossWatch {
  const now = deps.now ?? Date.now;
  const key = `${deps.queue.qualifiedName}:outbox-marker`;
  let expected: string | null = null;
  const runner = startPeriodicRunner(
    async () => {
      await deps.redis.set(key, randomBytes(8).toString('hex'), 'NX');
      const current = await deps.redis.get(key);
      if (expected !== null && current !== expected) {
        deps.logger.warn('the delivery queue was lost from Redis (its marker key changed); reconciling every pending delivery now', {});
        deps.onLoss(now());
      }
      expected = current;
      return { full: false };
    },
    { name: 'queue loss check', intervalMs: deps.intervalMs, logger: deps.logger },
  );
  return { stop: () => runner.stop() };
}
