import { randomBytes, randomUUID } from 'node:crypto';
import {
  createCredentialsCipher,
  deliveryAttemptRepository,
  eventRepository,
  partitionName,
  targetRepository,
  tenantRepository,
  weekStart,
  type AttemptOutcome,
} from '@herald/db';
import { createPrismaClient, sqlPool, type PrismaClient } from '@herald/db/prisma';
import { metricValue, storeEvents, useMigratedDatabase } from '@herald/testing';
import { attachedPartitions, maintenanceAt } from './support/partition-maintenance';

// Partition maintenance works on whole tables: a database of this file's own.
const database = useMigratedDatabase('herald_partitions');
let prisma: PrismaClient;
beforeAll(() => {
  prisma = createPrismaClient(database.url);
});
afterAll(() => prisma.$disconnect());

const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;
const cipher = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: randomBytes(32) } });

async function record(deliveryId: string, outcome: AttemptOutcome): Promise<void> {
  await deliveryAttemptRepository(sqlPool(prisma), cipher).recordAttempts([
    { deliveryId, attempt: { startedAt: new Date(), durationMs: 5, statusCode: outcome === 'succeeded' ? 200 : 500 }, outcome },
  ]);
}

describe('partition maintenance', () => {
  it('with the clock moved past retention, drops the old week (held while a delivery is pending), keeps the newer one, and event counts stay exact', async () => {
    const programId = `prg-${randomUUID()}`;
    await tenantRepository(sqlPool(prisma)).createProgram({ id: programId, name: 'Program' });
    await targetRepository(sqlPool(prisma), cipher).upsert(
      { kind: 'program', programId },
      { url: 'https://merchant.example/hooks', auth: { mode: 'none' }, notifications: {}, enabled: true },
    );
    const { deliveries } = await storeEvents(
      sqlPool(prisma),
      ['a', 'b', 'c', 'd'].map((name, n) => ({
        event: {
          id: `Event-${randomUUID()}`,
          createdAt: new Date(Date.UTC(2026, 10, 20, 10, 0, n)).toISOString(),
          origin: 'api',
          eventType: 'created',
          objectId: name,
          objectType: 'payment',
        },
        programId,
        contentHash: randomUUID(),
      })),
    );
    const [a, b, c, d] = deliveries.map((delivery) => delivery.deliveryId) as [string, string, string, string];
    // a, b, c were created this week; d next week (its partition exists ahead).
    const thisWeek = weekStart(new Date());
    const nextWeek = new Date(thisWeek.getTime() + WEEK_MS);
    await prisma.$executeRawUnsafe(`UPDATE deliveries SET created_at = $1 WHERE id = $2::uuid`, new Date(nextWeek.getTime() + 3_600_000), d);
    await record(a, 'succeeded');
    await record(b, 'failed');
    await record(c, 'pending');
    const events = eventRepository(sqlPool(prisma));
    const page = await events.list({ scope: { kind: 'program', programId }, page: 1, pageSize: 20 });
    expect(page.count).toBe(4);

    // 30 days after next week began: this week is past retention, next week is not.
    const now = new Date(nextWeek.getTime() + 30 * DAY_MS + 3_600_000);
    const { loop, lines, metrics } = maintenanceAt(prisma, () => now);
    try {
      const held = await loop.runOnce();
      expect(held.dropped).toEqual([]);
      expect(held.held).toEqual([{ week: thisWeek.toISOString().slice(0, 10), pending: 1 }]);
      expect(lines).toContainEqual({
        level: 'warn',
        message: 'partition maintenance kept a week past DELIVERY_RETENTION_DAYS: it holds pending deliveries',
        fields: { week: thisWeek.toISOString().slice(0, 10), pending: 1 },
      });
      expect(metricValue(await metrics.exposition(), 'herald_retention_held_partitions')).toBe(1);
      expect(await prisma.delivery.count({ where: { id: { in: [a, b, c, d] } } })).toBe(4);
      // Weeks were created ahead of the moved clock too.
      const ahead = Array.from({ length: 5 }, (_, n) => partitionName('deliveries', new Date(weekStart(now).getTime() + n * WEEK_MS)));
      expect(await attachedPartitions(prisma, 'deliveries')).toEqual(expect.arrayContaining(ahead));

      // c's retry succeeds: nothing holds this week any more.
      await record(c, 'succeeded');
      const dropped = await loop.runOnce();
      expect(dropped.dropped).toEqual([{ week: thisWeek.toISOString().slice(0, 10), deliveries: 3, attempts: 4 }]);
      expect(dropped.held).toEqual([]);
      expect(lines).toContainEqual({
        level: 'info',
        message: 'partition maintenance dropped a week of deliveries past DELIVERY_RETENTION_DAYS',
        fields: { week: thisWeek.toISOString().slice(0, 10), deliveries: 3, attempts: 4, retentionDays: 30 },
      });
      const exposition = await metrics.exposition();
      expect(metricValue(exposition, 'herald_retention_dropped_partitions_total')).toBe(1);
      expect(metricValue(exposition, 'herald_retention_dropped_rows_total', { table: 'deliveries' })).toBe(3);
      expect(metricValue(exposition, 'herald_retention_dropped_rows_total', { table: 'delivery_attempts' })).toBe(4);
      expect(metricValue(exposition, 'herald_retention_held_partitions')).toBe(0);

      // The week is gone from both tables; next week, with the pending d, is still there.
      for (const table of ['deliveries', 'delivery_attempts'] as const) {
        expect(await attachedPartitions(prisma, table)).not.toContain(partitionName(table, thisWeek));
        expect(await attachedPartitions(prisma, table)).toContain(partitionName(table, nextWeek));
      }
      expect((await prisma.delivery.findMany({ where: { id: { in: [a, b, c, d] } } })).map((row) => [row.id, row.status])).toEqual([[d, 'pending']]);
      expect(await prisma.deliveryAttempt.count({ where: { deliveryId: { in: [a, b, c] } } })).toBe(0);
      // Events are not under delivery retention: listed and counted as before.
      expect(await events.list({ scope: { kind: 'program', programId }, page: 1, pageSize: 20 })).toEqual(page);

      // A third pass finds nothing more to do.
      const third = await loop.runOnce();
      expect(third).toMatchObject({ created: [], dropped: [], held: [] });
    } finally {
      await loop.stop();
    }
  });

  it('finishes a week a pass detached but could not drop (the process died in between)', async () => {
    const week = new Date(weekStart(new Date()).getTime() + 3 * WEEK_MS);
    for (const table of ['delivery_attempts', 'deliveries'] as const) {
      await prisma.$executeRawUnsafe(`ALTER TABLE ${table} DETACH PARTITION ${partitionName(table, week)}`);
    }
    const { loop } = maintenanceAt(prisma, () => new Date());
    try {
      const report = await loop.runOnce();
      expect(report.dropped).toEqual([{ week: week.toISOString().slice(0, 10), deliveries: 0, attempts: 0 }]);
      // Still ahead of the clock: created again, empty. (The first test's clock dropped the current
      // week, which this pass, back at the real time, creates again too.)
      expect(report.created).toEqual(expect.arrayContaining([partitionName('deliveries', week), partitionName('delivery_attempts', week)]));
      const leftovers = await prisma.$queryRawUnsafe<unknown[]>(
        "SELECT relname FROM pg_class WHERE relkind = 'r' AND NOT relispartition AND relname ~ '^(deliveries|delivery_attempts)_p[0-9]{8}$'",
      );
      expect(leftovers).toEqual([]);
    } finally {
      await loop.stop();
    }
  });

  it('drops nothing when DELIVERY_RETENTION_DAYS is 0, however far the clock moves', async () => {
    const before = await attachedPartitions(prisma, 'deliveries');
    const { loop } = maintenanceAt(prisma, () => new Date(Date.now() + 3_650 * DAY_MS), { deliveryRetentionDays: 0 });
    try {
      const report = await loop.runOnce();
      expect(report.dropped).toEqual([]);
      expect(await attachedPartitions(prisma, 'deliveries')).toEqual(expect.arrayContaining(before));
    } finally {
      await loop.stop();
    }
  });
});
