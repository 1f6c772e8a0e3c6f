import type { DeliveryRepository } from '@herald/db';
import type { HeraldMetrics } from '@herald/metrics';
import type { DeliveryProducer } from '@herald/queue';
import type { OutboxLogger } from './outbox-logger';
import { startOutboxTask, type OutboxTaskSchedule } from './outbox-task';

/** How the sweeper runs (SWEEPER_* settings); `batchSize` is the most deliveries enqueued per sweep. */
export interface SweeperOptions extends OutboxTaskSchedule {
  /** Deliveries younger than this are left to the events-api's own enqueue after commit. */
  readonly graceMs: number;
}

export interface SweeperDependencies {
  deliveries: Pick<DeliveryRepository, 'claimUnswept' | 'clearEnqueued'>;
  producer: Pick<DeliveryProducer, 'enqueue'>;
  config: SweeperOptions;
  logger: Pick<OutboxLogger, 'info' | 'warn'>;
  /** Counts the deliveries each sweep enqueues. */
  metrics: Pick<HeraldMetrics, 'sweeperEnqueued'>;
}

export interface Sweeper {
  /** One sweep: enqueues up to a batch of forgotten deliveries; returns how many. Throws what the sweep threw. */
  sweepOnce(): Promise<number>;
  /** Stops the loop and waits for a sweep in progress. */
  stop(): Promise<void>;
}

/**
 * The outbox sweeper: every `intervalMs`, enqueues pending deliveries that were stored but never
 * enqueued (the events-api could not reach Redis after its commit and cleared their mark, or a
 * replay's enqueue failed). Every worker process runs one; claiming rows under SKIP LOCKED and
 * job ids equal to delivery ids make that safe. The first sweep waits an interval, like every later one: a
 * forgotten delivery is at least `graceMs` old anyway, and a pass started beside a caller's own
 * `sweepOnce` would take its rows (SKIP LOCKED) from under it.
 */
export function startSweeper(deps: SweeperDependencies): Sweeper {
  const { config, logger } = deps;
  const task = startOutboxTask(
    async () => {
      // Claimed (marked enqueued) and committed first, then enqueued: no row lock is held while
      // Redis is asked. Jobs that cannot be added are handed back to the next sweep; should even
      // that fail, or the process die in between, the deliveries are marked enqueued without a
      // job, which is what the reconciler finds once their stale period has passed.
      const claimed = await deps.deliveries.claimUnswept({ limit: config.batchSize, graceMs: config.graceMs });
      if (claimed.length > 0) {
        try {
          await deps.producer.enqueue(claimed);
        } catch (error) {
          await deps.deliveries.clearEnqueued(claimed).catch(() => undefined);
          throw error;
        }
      }
      deps.metrics.sweeperEnqueued(claimed.length);
      return claimed.length;
    },
    {
      name: 'sweep',
      schedule: config,
      logger,
      afterPass: (enqueued) => {
        if (enqueued > 0) logger.info('sweeper enqueued forgotten deliveries', { deliveries: enqueued });
        return { full: enqueued === config.batchSize };
      },
    },
  );
  return { sweepOnce: task.runOnce, stop: task.stop };
}
