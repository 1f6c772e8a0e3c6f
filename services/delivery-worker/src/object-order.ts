import type { ObjectOrderRepository, OrderedDelivery } from '@herald/db';
import { createCoalescer } from '@herald/queue';

/**
 * Ordered delivery, the worker's side (a target with ordering `object`; docs/delivery.md): a job
 * whose delivery has an earlier delivery of the same object to the same target with no final
 * outcome yet is parked: moved to the delayed set, without a POST and without spending an attempt,
 * its delivery marked waiting for that predecessor. It holds no worker slot and nothing polls for
 * it: when the predecessor's final outcome (delivered, or failed for good) is recorded, its worker
 * wakes the jobs waiting for it. Jobs of other objects are never held.
 *
 * The predecessor's row stays locked from the moment a job finds it pending until the job is
 * parked and its delivery marked: the predecessor's outcome cannot be recorded in between, so its
 * worker, which looks for waiting deliveries once its record committed, always finds this one.
 * What a crash can leave behind, and how long it waits at most:
 * - the predecessor's worker stopped between its record and the wake-up: the reconciler wakes
 *   parked deliveries whose predecessor has its outcome at its next pass (RECONCILER_INTERVAL_MS);
 * - this worker stopped between parking the job and committing the mark: the job comes back by
 *   itself after PARKED_JOB_MAX_MS and looks again;
 * - Redis lost the jobs: the reconciler gives the pending deliveries new jobs, which look again.
 */
export interface ObjectOrder {
  /**
   * Parks the job behind its delivery's nearest earlier pending delivery of the same object, if
   * there still is one: `park(until)` moves the job to the delayed set (until then at most), while
   * that delivery's row is locked. Returns the delivery it waits for, or null: go ahead.
   */
  waitForPredecessor(delivery: OrderedDelivery, park: (until: number) => Promise<void>): Promise<string | null>;
  /** Wakes the jobs waiting for this delivery, whose final outcome was recorded (committed). */
  releaseSuccessors(delivery: OrderedDelivery): Promise<void>;
}

/**
 * How long a parked job stays delayed if no wake-up comes: only a worker stopped within the few
 * milliseconds between parking a job and committing its mark leaves one so (every other wake-up
 * that goes missing is the reconciler's). Long, so that a chain behind a predecessor in a
 * six-hour backoff is not re-checked over and over; short enough that such a chain moves the same day.
 */
const PARKED_JOB_MAX_MS = 60 * 60_000;

/** Lookups of waiting deliveries one worker runs at once; the finals of its other jobs meanwhile go together in the next. */
const RELEASES_IN_FLIGHT = 2;

export function createObjectOrder(deps: {
  repository: Pick<ObjectOrderRepository, 'transaction' | 'waitingFor'>;
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
    waitForPredecessor: (delivery, park) =>
      deps.repository.transaction(async (tx) => {
        const predecessor = await tx.lockPredecessor(delivery);
        if (predecessor === null) return null;
        const at = now();
        await park(at + PARKED_JOB_MAX_MS);
        await tx.markWaiting(delivery, predecessor, new Date(at));
        return predecessor;
      }),
    releaseSuccessors: release,
  };
}
