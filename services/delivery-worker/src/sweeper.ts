import type { SweeperConfig } from '@herald/config';
import type { DeliveryRepository } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { HeraldMetrics } from '@herald/metrics';
import type { DeliveryProducer } from '@herald/queue';

export interface SweeperDependencies {
  deliveries: DeliveryRepository;
  producer: DeliveryProducer;
  config: SweeperConfig;
  logger: Logger;
  /** Counts the deliveries each sweep enqueues. */
  metrics: Pick<HeraldMetrics, 'sweeperEnqueued'>;
}

export interface Sweeper {
  /** One sweep: enqueues up to a batch of forgotten deliveries; returns how many. */
  sweepOnce(): Promise<number>;
  /** Stops the loop and waits for a sweep in progress. */
  stop(): Promise<void>;
}

/**
 * The outbox sweeper: every SWEEPER_INTERVAL_MS, enqueues pending deliveries that the events-api
 * stored but could not enqueue (Redis down, process killed between commit and enqueue). Every
 * worker process runs one; row locks (SKIP LOCKED) and job ids equal to delivery ids make that safe.
 * A full batch is followed at once by the next, so a backlog drains without waiting an interval.
 */
export function startSweeper(deps: SweeperDependencies): Sweeper {
  const { config, logger } = deps;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const sweepOnce = async (): Promise<number> => {
    const enqueued = await deps.deliveries.sweep({ limit: config.batchSize, graceMs: config.graceMs }, (refs) => deps.producer.enqueue(refs));
    deps.metrics.sweeperEnqueued(enqueued);
    return enqueued;
  };

  const loop = async (): Promise<void> => {
    let delay = config.intervalMs;
    try {
      const enqueued = await sweepOnce();
      if (enqueued > 0) logger.info('sweeper enqueued forgotten deliveries', { deliveries: enqueued });
      if (enqueued === config.batchSize) delay = 0;
    } catch (error) {
      logger.warn('sweep failed; trying again next interval', { error: error instanceof Error ? error.message : String(error) });
    }
    if (!stopped) timer = setTimeout(() => (running = loop()), delay);
  };
  timer = setTimeout(() => (running = loop()), 0);

  return {
    sweepOnce,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
