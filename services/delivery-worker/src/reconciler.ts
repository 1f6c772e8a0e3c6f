import type { ReconcilerConfig } from '@herald/config';
import type { DeliveryRepository, ReconcileResult } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { HeraldMetrics } from '@herald/metrics';
import type { DeliveryProducer } from '@herald/queue';

export interface ReconcilerDependencies {
  deliveries: Pick<DeliveryRepository, 'reconcile'>;
  /** A fail-fast producer: while Redis is down a pass fails at once and releases its row locks. */
  producer: Pick<DeliveryProducer, 'requeueDead'>;
  config: ReconcilerConfig;
  logger: Logger;
  metrics: Pick<HeraldMetrics, 'reconciled'>;
}

export interface Reconciler {
  /** One pass: checks up to a batch of stale pending deliveries against the queue. */
  reconcileOnce(): Promise<ReconcileResult>;
  /** Stops the loop and waits for a pass in progress. */
  stop(): Promise<void>;
}

/**
 * The reconciler: the database is the record of what must be delivered, the queue only a means.
 * Every RECONCILER_INTERVAL_MS it takes up to RECONCILER_BATCH_SIZE pending deliveries enqueued,
 * and last found alive in the queue, more than RECONCILER_STALE_AFTER_MS ago, and gives a new job
 * to each whose job is gone or finished: a Redis restarted without persistence, flushed or
 * evicting keys loses jobs, and BullMQ fails a job that stalled more than its limit without the
 * processor ever recording an outcome. The sweeper covers deliveries never enqueued; this covers
 * those enqueued and since lost. Every worker process runs one; SKIP LOCKED row locks keep them
 * apart. A full batch that requeued something (a sign of a loss) is followed at once by the next,
 * so a lost queue is rebuilt without waiting an interval per batch; otherwise one batch per
 * interval bounds the checking of a large backlog of healthy retries.
 */
export function startReconciler(deps: ReconcilerDependencies): Reconciler {
  const { config, logger } = deps;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const reconcileOnce = async (): Promise<ReconcileResult> => {
    const result = await deps.deliveries.reconcile({ limit: config.batchSize, staleMs: config.staleAfterMs }, (refs) => deps.producer.requeueDead(refs));
    deps.metrics.reconciled(result.checked, result.requeued);
    return result;
  };

  const loop = async (): Promise<void> => {
    let delay = config.intervalMs;
    try {
      const result = await reconcileOnce();
      if (result.requeued > 0) logger.warn('reconciler requeued deliveries whose job the queue had lost', { ...result });
      else if (result.checked > 0) logger.debug('reconciler found every checked delivery alive in the queue', { ...result });
      if (result.requeued > 0 && result.checked === config.batchSize) delay = 0;
    } catch (error) {
      logger.warn('reconciliation failed; trying again next interval', { error: error instanceof Error ? error.message : String(error) });
    }
    if (!stopped) timer = setTimeout(() => (running = loop()), delay);
  };
  timer = setTimeout(() => (running = loop()), config.intervalMs);

  return {
    reconcileOnce,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
