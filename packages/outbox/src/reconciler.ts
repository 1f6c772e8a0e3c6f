import type { DeliveryRepository, ObjectOrderRepository } from '@herald/db';
import type { HeraldMetrics } from '@herald/metrics';
import type { DeliveryProducer } from '@herald/queue';
import type { OutboxLogger } from './outbox-logger';
import { startOutboxTask, type OutboxTaskSchedule } from './outbox-task';

/** How the reconciler runs (RECONCILER_* settings); `batchSize` is the most pending deliveries checked per pass. */
export interface ReconcilerOptions extends OutboxTaskSchedule {
  /** A pending delivery is checked once it was enqueued, and last found alive in the queue, longer ago than this. */
  readonly staleAfterMs: number;
}

export interface ReconcilerDependencies {
  deliveries: Pick<DeliveryRepository, 'transaction'>;
  /** Ordered delivery's waits: each pass wakes the parked deliveries whose predecessor has its outcome but whose wake-up was lost. */
  order: Pick<ObjectOrderRepository, 'orphanedWaits'>;
  /** A fail-fast producer: while Redis is down a pass fails at once and releases its row locks. */
  producer: Pick<DeliveryProducer, 'requeueDead' | 'wake'>;
  config: ReconcilerOptions;
  logger: Pick<OutboxLogger, 'warn' | 'debug'>;
  metrics: Pick<HeraldMetrics, 'reconciled'>;
  /** The clock, in milliseconds (tests pass their own). Default `Date.now`. */
  now?: () => number;
}

/** What one reconciliation pass did. */
export interface ReconcileResult {
  /** Pending deliveries whose job was looked up in the queue. */
  checked: number;
  /** Those among them that were given a new job. */
  requeued: number;
  /** Parked deliveries of ordered targets woken because their predecessor's worker stopped before it woke them. */
  woken?: number;
}

export interface Reconciler {
  /** One pass: checks up to a batch of stale pending deliveries against the queue. Throws what the pass threw. */
  reconcileOnce(): Promise<ReconcileResult>;
  /**
   * After Redis lost the queue (noticed at `lostAt`, ms): checks every pending delivery enqueued,
   * or last found alive, before then, however recently, batch after batch, and requeues those whose
   * job is gone. Runs beside the periodic passes (SKIP LOCKED keeps them apart); resolves with the
   * totals, or throws what a pass threw (the periodic passes then finish the work).
   */
  reconcileSince(lostAt: number): Promise<ReconcileResult>;
  /** Stops the loop and waits for a pass in progress. */
  stop(): Promise<void>;
}

/**
 * The reconciler: the database is the record of what must be delivered, the queue only a means.
 * Every `intervalMs` it takes up to `batchSize` pending deliveries enqueued, and last found alive
 * in the queue, more than `staleAfterMs` ago, and gives a new job to each whose job is gone or
 * finished: a Redis restarted without persistence, flushed or evicting keys loses jobs, and BullMQ
 * fails a job that stalled more than its limit without the processor ever recording an outcome.
 * The sweeper covers deliveries never enqueued; this covers those enqueued and since lost. Every
 * worker process runs one; SKIP LOCKED row locks keep them apart. Only a full batch that requeued
 * something (a sign of a loss) counts as full, so a lost queue is rebuilt without waiting an
 * interval per batch, while one batch per interval bounds the checking of a large backlog of
 * healthy retries.
 */
export function startReconciler(deps: ReconcilerDependencies): Reconciler {
  const { config, logger } = deps;
  const now = deps.now ?? Date.now;
  const pass = async (staleMs: number): Promise<ReconcileResult> => {
    // The rows stay locked while Redis is asked about their jobs: the design needs it. A worker
    // finishing one of these deliveries records its attempt before its job completes, and that
    // record waits for the lock; so a job this pass finds finished or gone belongs to a delivery
    // whose outcome was never recorded, not to one being recorded right now, and requeueing it
    // sends no callback twice. Several workers' passes skip each other's rows (SKIP LOCKED).
    const result = await deps.deliveries.transaction(async (tx): Promise<ReconcileResult> => {
      const stale = await tx.lockStale({ limit: config.batchSize, staleMs });
      if (stale.length === 0) return { checked: 0, requeued: 0 };
      const requeued = await deps.producer.requeueDead(stale);
      await tx.markChecked(stale, requeued);
      return { checked: stale.length, requeued: requeued.size };
    });
    deps.metrics.reconciled(result.checked, result.requeued);
    return result;
  };
  // A wake-up lost with the worker that recorded a predecessor's outcome: the parked job would
  // otherwise wait for its own time limit (the worker's PARKED_JOB_MAX_MS). Waking a job that is
  // not parked any more does nothing, so no lock is needed.
  const wakeOrphans = async (): Promise<number> => {
    const orphaned = await deps.order.orphanedWaits(config.batchSize);
    if (orphaned.length > 0) await deps.producer.wake(orphaned);
    return orphaned.length;
  };
  const task = startOutboxTask(async () => ({ ...(await pass(config.staleAfterMs)), woken: await wakeOrphans() }), {
    name: 'reconciliation',
    schedule: config,
    logger,
    afterPass: (result) => {
      if (result.woken) logger.warn('reconciler woke parked callbacks whose previous callback of the object had its outcome', { woken: result.woken });
      if (result.requeued > 0) logger.warn('reconciler requeued deliveries whose job the queue had lost', { ...result });
      else if (result.checked > 0) logger.debug('reconciler found every checked delivery alive in the queue', { ...result });
      return { full: result.requeued > 0 && result.checked === config.batchSize };
    },
  });
  return {
    reconcileOnce: task.runOnce,
    async reconcileSince(lostAt) {
      const total: ReconcileResult = { checked: 0, requeued: 0 };
      for (;;) {
        // Stale since the loss, as a duration: the database's own clock then draws the line, so
        // that this process's clock and PostgreSQL's need not agree. Each pass stamps the rows it
        // checks (after the loss), so the next takes the following batch and the loop ends.
        const result = await pass(Math.max(0, now() - lostAt));
        total.checked += result.checked;
        total.requeued += result.requeued;
        if (result.checked < config.batchSize) break;
      }
      logger.warn('reconciler requeued the deliveries whose job the lost queue held, checking every pending one', { ...total });
      return total;
    },
    stop: task.stop,
  };
}
