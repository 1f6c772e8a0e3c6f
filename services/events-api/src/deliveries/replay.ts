import type { DeliveryHistoryRepository, DeliveryStatus, ReplaySelection } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { OutboxPublisher } from '@herald/outbox';
import type { DeliveryProducer } from '@herald/queue';
import { HttpError } from '../http/http-error';
import { deliveryView, type DeliveryView } from './views';

/** What became of a replayed delivery's job. */
type ReplayedJob =
  /** A new job is in the queue (its finished job, if any, was removed). */
  | 'added'
  /** Its job was still waiting, delayed or running; that job makes the next attempt. */
  | 'already-queued'
  /** Redis refused the new job after the delivery was reset: the outbox sweeper enqueues it shortly. */
  | 'left-to-sweeper';

interface ReplayedDeliveryView extends DeliveryView {
  previousStatus: DeliveryStatus;
  job: ReplayedJob;
}

export interface ReplayAnswer {
  /** The deliveries replayed, now pending, oldest first. */
  deliveries: ReplayedDeliveryView[];
  /** More deliveries matched than the limit allowed. */
  more: boolean;
}

export interface ReplayDependencies {
  history: DeliveryHistoryRepository;
  /** Adds the new jobs once the deliveries are committed as pending. */
  outbox: Pick<OutboxPublisher, 'publishUnmarked'>;
  /** Removes the deliveries' finished jobs, so that new ones can take their job ids. */
  producer: Pick<DeliveryProducer, 'removeFinishedJobs'>;
  logger: Logger;
}

// What a client is told to wait while Redis is unavailable.
const QUEUE_RETRY_AFTER_SECONDS = 5;

/**
 * Replays deliveries: the worker makes new attempts, numbered after the old ones. In order:
 * 1. lock the deliveries and remove their finished jobs (BullMQ ignores an add whose job id, the
 *    delivery id, still exists); if Redis fails here, nothing has changed: 503;
 * 2. set them back to pending and commit;
 * 3. only then add the new jobs, since the worker skips a job whose delivery still reads as
 *    succeeded; if Redis fails here, the deliveries wait in the outbox for the sweeper.
 */
export function createReplay(deps: ReplayDependencies): (selection: ReplaySelection) => Promise<ReplayAnswer> {
  return async (selection) => {
    const result = await deps.history.replay(selection, async (ids) => {
      try {
        return await deps.producer.removeFinishedJobs(ids);
      } catch (error) {
        deps.logger.warn('replay refused: the queue is unavailable', { error });
        throw new HttpError(
          503,
          'queue_unavailable',
          'Service Unavailable',
          'The delivery queue is unavailable; nothing was replayed. Retry later.',
          {},
          {
            'Retry-After': String(QUEUE_RETRY_AFTER_SECONDS),
          },
        );
      }
    });

    const needJobs = result.deliveries.filter((d) => !d.jobQueued);
    const added = await deps.outbox.publishUnmarked(
      needJobs.map((d) => ({
        deliveryId: d.id,
        eventId: d.eventId,
        targetId: d.targetId,
        programId: d.programId,
        merchantId: d.merchantId,
        targetOwner: d.targetOwner,
        storedAt: d.createdAt.toISOString(),
      })),
    );

    return {
      deliveries: result.deliveries.map(({ previousStatus, jobQueued, targetOwner: _owner, ...record }) => ({
        ...deliveryView(record),
        previousStatus,
        job: jobQueued ? 'already-queued' : added ? 'added' : 'left-to-sweeper',
      })),
      more: result.more,
    };
  };
}
