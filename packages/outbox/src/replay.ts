import type { DeliveryHistoryRepository, DeliveryRecord, DeliveryStatus, ReplayCandidate, ReplaySelection, ReplayTransaction } from '@herald/db';
import { QueueUnavailableError, type DeliveryRef } from '@herald/domain';
import type { DeliveryProducer } from '@herald/queue';
import type { OutboxLogger } from './outbox-logger';
import type { OutboxPublisher } from './publish';

/** What became of a replayed delivery's job. */
export type ReplayedJob =
  /** A new job is in the queue (its finished job, if any, was removed). */
  | 'added'
  /** Its job was still waiting, delayed or running; that job makes the next attempt. */
  | 'already-queued'
  /** Redis refused the new job after the delivery was reset: the outbox sweeper enqueues it shortly. */
  | 'left-to-sweeper';

/** A replayed delivery, now pending, with its status before the replay and what became of its job. */
export interface ReplayedDelivery extends DeliveryRecord {
  previousStatus: DeliveryStatus;
  job: ReplayedJob;
}

export interface ReplayResult {
  /** The deliveries replayed, now pending, oldest first. */
  deliveries: ReplayedDelivery[];
  /** More deliveries matched than the limit allowed; replay again to take the next ones. */
  more: boolean;
}

export interface ReplayDependencies {
  history: Pick<DeliveryHistoryRepository, 'transaction'>;
  /** Removes the deliveries' finished jobs, so that new ones can take their job ids. */
  producer: Pick<DeliveryProducer, 'removeFinishedJobs'>;
  /** Adds the new jobs once the deliveries are committed as pending. */
  publisher: Pick<OutboxPublisher, 'publishUnmarked'>;
  logger: Pick<OutboxLogger, 'warn'>;
}

/**
 * Replays deliveries: the worker makes new attempts, numbered after the old ones. In order:
 * 1. lock the deliveries and remove their finished jobs (BullMQ ignores an add whose job id, the
 *    delivery id, still exists). The row locks are held while Redis is asked, as the design needs:
 *    the worker and the sweeper must not write these rows between the removal and the reset. If
 *    Redis fails here, nothing has changed: QueueUnavailableError;
 * 2. set them back to pending and commit;
 * 3. only then add the new jobs, since the worker skips a job whose delivery still reads as
 *    succeeded; if Redis fails here, the deliveries wait in the outbox for the sweeper.
 */
export function createReplay(deps: ReplayDependencies): (selection: ReplaySelection) => Promise<ReplayResult> {
  return async (selection) => {
    const now = new Date();
    const { locked, more, queued } = await deps.history.transaction(async (tx) => {
      const { deliveries, more } = await tx.lockForReplay(selection);
      const queued = await resetLocked(
        deps,
        tx,
        deliveries.map((d) => d.id),
        now,
      );
      return { locked: deliveries, more, queued };
    });

    const added = await deps.publisher.publishUnmarked(locked.filter((d) => !queued.has(d.id)).map(refOf));
    return {
      deliveries: locked.map(({ targetOwner: _owner, ...record }) => {
        const jobQueued = queued.has(record.id);
        return {
          ...record,
          status: 'pending',
          completedAt: null,
          updatedAt: now,
          enqueuedAt: jobQueued ? record.enqueuedAt : null,
          previousStatus: record.status,
          job: jobQueued ? 'already-queued' : added ? 'added' : 'left-to-sweeper',
        };
      }),
      more,
    };
  };
}

/**
 * Steps 1 and 2 of a replay, on deliveries the caller's transaction has locked: removes their
 * finished jobs and sets them back to pending, unmarked when they need a new job (whose adding,
 * step 3, waits for the commit). Returns the ids whose job was still waiting, delayed or running:
 * those keep it and need none. Shared by the admin's replay and the merchant's recovery, so that
 * both go through the queue the same way.
 */
export async function resetLocked(
  deps: Pick<ReplayDependencies, 'producer' | 'logger'>,
  tx: Pick<ReplayTransaction, 'reset'>,
  deliveryIds: readonly string[],
  now: Date,
  /** What the caller does, for the log and the error when Redis fails: `replay`, `recovery`. */
  work = 'replay',
): Promise<Set<string>> {
  if (deliveryIds.length === 0) return new Set();
  const slots = await removeFinishedJobs(deps, deliveryIds, work);
  const stillQueued = new Set(deliveryIds.filter((id) => slots.get(id) !== 'free'));
  await tx.reset(
    deliveryIds.filter((id) => !stillQueued.has(id)),
    true,
    now,
  );
  await tx.reset([...stillQueued], false, now);
  return stillQueued;
}

async function removeFinishedJobs(
  deps: Pick<ReplayDependencies, 'producer' | 'logger'>,
  deliveryIds: readonly string[],
  work: string,
): Promise<ReadonlyMap<string, 'free' | 'queued'>> {
  try {
    return await deps.producer.removeFinishedJobs(deliveryIds);
  } catch (error) {
    deps.logger.warn(`${work} refused: the queue is unavailable`, { error });
    throw new QueueUnavailableError(`nothing was changed by the ${work}`, { cause: error });
  }
}

/** The queue's reference to a locked delivery, for its new job. */
function refOf(delivery: ReplayCandidate): DeliveryRef {
  return {
    deliveryId: delivery.id,
    eventId: delivery.eventId,
    targetId: delivery.targetId,
    programId: delivery.programId,
    merchantId: delivery.merchantId,
    targetOwner: delivery.targetOwner,
    storedAt: delivery.createdAt.toISOString(),
  };
}
