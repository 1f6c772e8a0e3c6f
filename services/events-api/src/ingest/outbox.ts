import type { DeliveryRef, DeliveryRepository } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { DeliveryProducer } from '@herald/queue';

/**
 * Enqueues the deliveries of a committed ingest, then marks them enqueued. A failure is logged, not
 * thrown: the events and their deliveries are stored, and the delivery-worker's sweeper enqueues
 * whatever is still unmarked, so the producer gets its 201 and nothing is lost.
 */
export function publishDeliveries(deps: { producer: DeliveryProducer; deliveries: DeliveryRepository; logger: Logger }) {
  return async (refs: readonly DeliveryRef[]): Promise<void> => {
    if (refs.length === 0) return;
    try {
      await deps.producer.enqueue(refs);
      await deps.deliveries.markEnqueued(refs.map((r) => r.deliveryId));
    } catch (error) {
      deps.logger.warn('deliveries stored but not enqueued; the sweeper will enqueue them', {
        deliveries: refs.length,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  };
}
