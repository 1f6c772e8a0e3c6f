import type { DeliveryStatus, ReplaySelection } from '@herald/db';
import type { ReplayedJob, ReplayResult } from '@herald/outbox';
import { deliveryView, type DeliveryView } from './views';

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

/** The outbox's replay (@herald/outbox createReplay), its deliveries shown as the admin API shows deliveries. */
export function replayAnswering(replay: (selection: ReplaySelection) => Promise<ReplayResult>): (selection: ReplaySelection) => Promise<ReplayAnswer> {
  return async (selection) => {
    const result = await replay(selection);
    return {
      deliveries: result.deliveries.map(({ previousStatus, job, ...record }) => ({ ...deliveryView(record), previousStatus, job })),
      more: result.more,
    };
  };
}
