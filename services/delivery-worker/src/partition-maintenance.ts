import type { PartitionsConfig } from '@herald/config';
import type { PartitionMaintenance, PartitionMaintenanceReport } from '@herald/db';
import type { HeraldMetrics } from '@herald/metrics';
import { startPeriodicRunner } from '@herald/lifecycle';
import type { OutboxLogger } from '@herald/outbox';

export interface PartitionMaintenanceDependencies {
  partitions: Pick<PartitionMaintenance, 'maintain'>;
  config: PartitionsConfig;
  logger: Pick<OutboxLogger, 'info' | 'warn'>;
  metrics: Pick<HeraldMetrics, 'retentionDropped' | 'retentionHeld' | 'eventRetentionDropped' | 'eventRetentionHeld'>;
  /** The time a pass counts from. Default: the system clock. */
  now?: () => Date;
  /** Wait before the loop's first pass. Default 0: weeks ahead exist soon after a deploy. */
  firstPassAfterMs?: number;
}

export interface PartitionMaintenanceLoop {
  /** One pass now, logged and counted like the loop's; throws what the pass threw. */
  runOnce(): Promise<PartitionMaintenanceReport>;
  /** Stops the loop and waits for a pass in progress. */
  stop(): Promise<void>;
}

/**
 * The delivery-worker's partition maintenance: at start and then every `intervalMs`, creates the
 * weeks of deliveries and the months of events ahead and drops those past DELIVERY_RETENTION_DAYS
 * and EVENT_RETENTION_DAYS (see @herald/db partitionMaintenance), on the process's periodic runner
 * (@herald/lifecycle) like the outbox's tasks. Every worker process runs one; an advisory lock lets
 * one pass at a time work.
 */
export function startPartitionMaintenance(deps: PartitionMaintenanceDependencies): PartitionMaintenanceLoop {
  const { config, logger, metrics } = deps;
  const now = deps.now ?? (() => new Date());

  const runOnce = async (): Promise<PartitionMaintenanceReport> => {
    const report = await deps.partitions.maintain({
      now: now(),
      deliveryRetentionDays: config.deliveryRetentionDays,
      eventRetentionDays: config.eventRetentionDays,
    });
    if (report.skipped) return report;
    if (report.managedByPgPartman) {
      logger.info('partition maintenance: pg_partman manages deliveries, delivery_attempts or events; Herald creates and drops no partition');
      return report;
    }
    if (report.created.length > 0) logger.info('partition maintenance created partitions', { partitions: report.created });
    for (const week of report.dropped) {
      logger.info('partition maintenance dropped a week of deliveries past DELIVERY_RETENTION_DAYS', { ...week, retentionDays: config.deliveryRetentionDays });
      metrics.retentionDropped(week);
    }
    for (const week of report.held) {
      logger.warn('partition maintenance kept a week past DELIVERY_RETENTION_DAYS: it holds pending deliveries', { ...week });
    }
    metrics.retentionHeld(report.held.length);
    for (const month of report.eventsDropped) {
      logger.info('partition maintenance dropped a month of events past EVENT_RETENTION_DAYS', { ...month, retentionDays: config.eventRetentionDays });
      metrics.eventRetentionDropped(month);
    }
    for (const month of report.eventsHeld) {
      logger.warn('partition maintenance kept a month of events past EVENT_RETENTION_DAYS: some of its events have pending deliveries', { ...month });
    }
    metrics.eventRetentionHeld(report.eventsHeld.length);
    return report;
  };

  const runner = startPeriodicRunner(
    async () => {
      await runOnce();
      return { full: false };
    },
    { name: 'partition maintenance', intervalMs: config.intervalMs, firstPassAfterMs: deps.firstPassAfterMs ?? 0, logger },
  );
  return { runOnce, stop: () => runner.stop() };
}
