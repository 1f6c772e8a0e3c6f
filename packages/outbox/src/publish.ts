import type { DeliveryRepository } from '@herald/db';
import type { DeliveryRef } from '@herald/domain';
import type { DeliveryProducer } from '@herald/queue';
import { traceLogFields, type TraceContext } from '@herald/telemetry';
import type { OutboxLogger } from './outbox-logger';

export interface OutboxPublisherDependencies {
  producer: Pick<DeliveryProducer, 'enqueue'>;
  deliveries: Pick<DeliveryRepository, 'clearEnqueued' | 'markEnqueued'>;
  logger: Pick<OutboxLogger, 'warn'>;
  /**
   * Told what became of each batch of deliveries the outbox tried to enqueue (the events-api
   * counts them in herald_delivery_enqueues_total). Must not throw. Default: nothing.
   */
  onEnqueue?: (outcome: EnqueueOutcome, deliveries: number) => void;
}

/** enqueued; or left to the sweeper (marked pending again) or, PostgreSQL failing too, to the reconciler. */
export type EnqueueOutcome = 'enqueued' | 'left_to_sweeper' | 'left_to_reconciler';

/** Adds the jobs of deliveries once the transaction that stored them has committed. */
export interface OutboxPublisher {
  /**
   * For deliveries stored already marked enqueued (the ingest). Never rejects: when the jobs cannot
   * be added, the mark is cleared so that the sweeper enqueues them soon; if even that fails
   * (PostgreSQL gone too), the reconciler gives them jobs once their stale period has passed.
   * Either way the events and their deliveries are stored, so the caller's request succeeded.
   * `parent`: the trace of the ingest, which the enqueue and the jobs join.
   */
  publish(refs: readonly DeliveryRef[], parent?: TraceContext): Promise<void>;
  /**
   * For deliveries stored unmarked (a replay, which sets deliveries back to pending): adds their
   * jobs, then marks them enqueued. Never rejects; returns false when the jobs could not be added,
   * which leaves the deliveries to the sweeper.
   */
  publishUnmarked(refs: readonly DeliveryRef[]): Promise<boolean>;
}

/**
 * The events-api's half of the outbox. A delivery's job is added only after its row is committed:
 * the worker trusts the database, and a job whose delivery it cannot see yet would fail.
 */
export function createOutboxPublisher(deps: OutboxPublisherDependencies): OutboxPublisher {
  const { logger } = deps;
  const counted = (outcome: EnqueueOutcome, refs: readonly DeliveryRef[]) => deps.onEnqueue?.(outcome, refs.length);
  const reason = (error: unknown) => (error instanceof Error ? error.message : String(error));
  return {
    async publish(refs, parent) {
      if (refs.length === 0) return;
      try {
        await deps.producer.enqueue(refs, parent);
        counted('enqueued', refs);
      } catch (error) {
        const cleared = await deps.deliveries.clearEnqueued(refs).then(
          () => true,
          () => false,
        );
        counted(cleared ? 'left_to_sweeper' : 'left_to_reconciler', refs);
        logger.warn(`deliveries stored but not enqueued; ${cleared ? 'the sweeper' : 'the reconciler'} will enqueue them`, {
          deliveries: refs.length,
          error: reason(error),
          ...traceLogFields(parent),
        });
      }
    },

    async publishUnmarked(refs) {
      if (refs.length === 0) return true;
      try {
        await deps.producer.enqueue(refs);
        counted('enqueued', refs);
      } catch (error) {
        counted('left_to_sweeper', refs);
        logger.warn('deliveries left to the sweeper: their jobs could not be added', { deliveries: refs.length, error: reason(error) });
        return false;
      }
      try {
        await deps.deliveries.markEnqueued(refs);
      } catch (error) {
        // The jobs exist: the sweeper may add them again, which is a no-op (job id = delivery id).
        logger.warn('deliveries enqueued but not marked enqueued', { deliveries: refs.length, error: reason(error) });
      }
      return true;
    },
  };
}
