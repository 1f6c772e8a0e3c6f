import type { ObjectOrderRepository, OrderedDelivery } from '@herald/db';
import { createCoalescer } from '@herald/queue';

/**
 * Ordered delivery, the worker's side (a target with ordering `object`; docs/delivery.md): a job
 * whose delivery has an earlier delivery of the same object to the same target with no final
 * outcome yet is parked: its delivery marked waiting for that predecessor, its job moved to the
 * delayed set, without a POST and without spending an attempt. It holds no worker slot and nothing
 * polls for it: when the predecessor's final outcome (delivered, or failed for good) is recorded,
 * its worker wakes the jobs marked waiting for it. Jobs of other objects are never held.
 *
 * The mark is committed before the job moves, and the predecessor is looked at once more after:
 * an outcome recorded in between finds the mark but not yet a parked job to wake (its wake-up does
 * nothing), so the parked job then wakes itself. What a crash can leave, and how long it waits:
 * - this worker stopped between the mark and the move: the job is still active under a lock that
 *   runs out, and BullMQ gives it to another worker (WORKER_LOCK_DURATION_MS, then the stalled check);
 * - the predecessor's worker stopped between its record and the wake-up: the reconciler wakes
 *   marked deliveries whose predecessor has its outcome at its next pass (RECONCILER_INTERVAL_MS);
 * - Redis lost the jobs: the reconciler gives the pending deliveries new jobs, which look again.
 */
export interface ObjectOrder {
  /**
   * Parks the job behind its delivery's nearest earlier pending delivery of the same object, if
   * there still is one: `park(until)` moves the job to the delayed set (until then at most).
   * Returns the delivery it waits for, or null: go ahead.
   */
  waitForPredecessor(delivery: OrderedDelivery, park: (until: number) => Promise<void>): Promise<string | null>;
  /** Wakes the jobs waiting for this delivery, whose final outcome was recorded (committed). */
  releaseSuccessors(delivery: OrderedDelivery): Promise<void>;
}

/**
 * How long a parked job stays delayed if no wake-up comes: a last resort, since every wake-up
 * that goes missing is the reconciler's (see ObjectOrder). Long, so that a chain behind a
 * predecessor in a six-hour backoff is not looked at over and over.
 */
const PARKED_JOB_MAX_MS = 60 * 60_000;

/** Lookups of waiting deliveries one worker runs at once; the finals of its other jobs meanwhile go together in the next. */
const RELEASES_IN_FLIGHT = 2;

export function createObjectOrder(deps: {
  repository: Pick<ObjectOrderRepository, 'predecessor' | 'markWaiting' | 'isPending' | 'waitingFor'>;
  /** Moves parked jobs back to the queue now (wakeParkedJobs of @herald/queue). */
  wake: (deliveryIds: readonly string[]) => Promise<void>;
  /** Most finals one lookup carries. */
  maxBatch: number;
  now?: () => number;
}): ObjectOrder {
  const now = deps.now ?? Date.now;
  const release = createCoalescer(
    async (deliveries: OrderedDelivery[]) => {
      const waiting = await deps.repository.waitingFor(deliveries);
      const successors = [...waiting.values()].flat();
      if (successors.length > 0) await deps.wake(successors);
      return deliveries.map(() => undefined);
    },
    { maxBatch: deps.maxBatch, maxInFlight: RELEASES_IN_FLIGHT },
  );
  return {
    async waitForPredecessor(delivery, park) {
      const predecessor = await deps.repository.predecessor(delivery);
      if (predecessor === null) return null;
      const at = now();
      await deps.repository.markWaiting(delivery, predecessor, new Date(at));
      await park(at + PARKED_JOB_MAX_MS);
      // Its outcome came meanwhile: its worker looked for marked deliveries before this job was parked.
      if (!(await deps.repository.isPending(predecessor))) await deps.wake([delivery.deliveryId]);
      return predecessor;
    },
    releaseSuccessors: release,
  };
}
