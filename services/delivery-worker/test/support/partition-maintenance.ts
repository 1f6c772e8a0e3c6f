import type { PartitionsConfig } from '@herald/config';
import { partitionMaintenance } from '@herald/db';
import { sqlPool, type PrismaClient } from '@herald/db/prisma';
import { createMetrics } from '@herald/metrics';
import { startPartitionMaintenance } from '../../src/partition-maintenance';

/** Deliveries kept 30 days, events for ever: the defaults. */
const DEFAULTS: PartitionsConfig = { intervalMs: 3_600_000, deliveryRetentionDays: 30, eventRetentionDays: 0 };

/**
 * A partition maintenance loop on `prisma`'s database whose clock reads `now()`, with its log lines
 * and metrics kept for the test to read. The loop never runs a pass on its own: the test drives
 * them with runOnce.
 */
export function maintenanceAt(prisma: PrismaClient, now: () => Date, options: Partial<PartitionsConfig> = {}) {
  const lines: Array<{ level: 'info' | 'warn'; message: string; fields?: object }> = [];
  const logger = {
    info: (message: string, fields?: object) => void lines.push({ level: 'info', message, ...(fields && { fields }) }),
    warn: (message: string, fields?: object) => void lines.push({ level: 'warn', message, ...(fields && { fields }) }),
  };
  const metrics = createMetrics({ service: 'test' });
  const loop = startPartitionMaintenance({
    partitions: partitionMaintenance(sqlPool(prisma)),
    config: { ...DEFAULTS, ...options },
    logger,
    metrics,
    now,
    firstPassAfterMs: 3_600_000,
  });
  return { loop, lines, metrics };
}

/** The partitions attached to `table`, by name. */
export async function attachedPartitions(prisma: PrismaClient, table: 'events' | 'deliveries' | 'delivery_attempts'): Promise<string[]> {
  const rows = await prisma.$queryRawUnsafe<Array<{ name: string }>>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = '${table}'::regclass ORDER BY 1`,
  );
  return rows.map((row) => row.name);
}
