import type { DeliveryRef, DeliveryRepository } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { DeliveryProducer } from '@herald/queue';

/**
 * Adds the jobs of a committed ingest's deliveries, which the ingest stored already marked
 * enqueued. A failure is logged, not thrown: the events and their deliveries are stored, so the
 * producer gets its 201 and nothing is lost. The deliveries' mark is cleared so that the
 * delivery-worker's sweeper enqueues them soon; if even that fails (PostgreSQL gone too), the
 * reconciler gives them jobs once RECONCILER_STALE_AFTER_MS has passed.
 */
export function publishDeliveries(deps: { producer: DeliveryProducer; deliveries: DeliveryRepository; logger: Logger }) {
  return async (refs: readonly DeliveryRef[]): Promise<void> => {
    if (refs.length === 0) return;
    try {
      await deps.producer.enqueue(refs);
    } catch (error) {
      const cleared = await deps.deliveries.clearEnqueued(refs.map((r) => r.deliveryId)).then(
        () => true,
        () => false,
      );
      deps.logger.warn(`deliveries stored but not enqueued; ${cleared ? 'the sweeper' : 'the reconciler'} will enqueue them`, {
        deliveries: refs.length,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  };
}
