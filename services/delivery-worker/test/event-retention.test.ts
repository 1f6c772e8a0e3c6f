import { randomBytes, randomUUID } from 'node:crypto';
import type { Event } from '@herald/domain';
import { createCredentialsCipher, eventPartitionName, eventRepository, monthStart, targetRepository, tenantRepository, type EventListQuery } from '@herald/db';
import { createPrismaClient, sqlPool, type PrismaClient } from '@herald/db/prisma';
import { metricValue, storeEvents, useMigratedDatabase, waitFor } from '@herald/testing';
import { attachedPartitions, maintenanceAt } from './support/partition-maintenance';

// Retention drops whole months of events: a database of this file's own.
const database = useMigratedDatabase('herald_event_retention');
let prisma: PrismaClient;
beforeAll(() => {
  prisma = createPrismaClient(database.url);
});
afterAll(() => prisma.$disconnect());

const DAY_MS = 86_400_000;
const cipher = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: randomBytes(32) } });

describe('event retention (EVENT_RETENTION_DAYS)', () => {
  it('with the clock moved past retention, drops the old month (held while a delivery is pending), keeps the newer one, and counts stay exact', async () => {
    const programId = `prg-${randomUUID()}`;
    const merchantId = `mer-${randomUUID()}`;
    await tenantRepository(sqlPool(prisma)).createProgram({ id: programId, name: 'Program' });
    await tenantRepository(sqlPool(prisma)).createMerchant({ id: merchantId, programId, name: 'Merchant' });
    await targetRepository(sqlPool(prisma), cipher).upsert(
      { kind: 'program', programId },
      { url: 'https://merchant.example/hooks', auth: { mode: 'none' }, notifications: {}, enabled: true },
    );
    const shapes = [
      { merchant: true, origin: 'api', objectType: 'payment', createdAt: '2026-11-20T10:00:00.000Z' },
      { merchant: false, origin: 'widget', objectType: 'refund', createdAt: '2026-11-20T10:00:01.000Z' },
      { merchant: true, origin: 'api', objectType: 'refund', createdAt: '2026-11-20T10:01:02.000Z' },
      { merchant: true, origin: 'api', objectType: 'payment', createdAt: '2026-11-21T08:00:00.500Z' },
    ] as const;
    const { events: stored, deliveries } = await storeEvents(
      sqlPool(prisma),
      shapes.map((shape, n) => ({
        event: {
          id: `Event-${randomUUID()}`,
          createdAt: shape.createdAt,
          origin: shape.origin,
          eventType: 'created',
          objectId: `o-${n}`,
          objectType: shape.objectType,
        },
        programId,
        ...(shape.merchant ? { merchantId } : {}),
        contentHash: randomUUID(),
      })),
    );
    const [a, b, c, d] = stored.map((event) => event.id) as [string, string, string, string];
    const deliveryOf = (eventId: string) => deliveries.find((delivery) => delivery.eventId === eventId)!.deliveryId;
    await prisma.$executeRawUnsafe(`UPDATE deliveries SET status = 'succeeded' WHERE id = $1::uuid`, deliveryOf(a));
    await prisma.$executeRawUnsafe(`UPDATE deliveries SET status = 'failed' WHERE id = $1::uuid`, deliveryOf(b));
    // a, b, c were ingested this month (c's delivery still pending); d next month (its partition exists ahead).
    const thisMonth = monthStart(new Date());
    const nextMonth = new Date(Date.UTC(thisMonth.getUTCFullYear(), thisMonth.getUTCMonth() + 1, 1));
    await prisma.$executeRawUnsafe('UPDATE events SET ingested_at = $1 WHERE id = $2', new Date(nextMonth.getTime() + 3_600_000), d);

    // Deep pages go through the bucket counters from the second event on.
    const events = eventRepository(sqlPool(prisma), { bucketWalkMinOffset: 1 });
    const program = { kind: 'program', programId } as const;
    const merchant = { kind: 'merchant', programId, merchantId } as const;
    const queries: EventListQuery[] = [
      { scope: program, page: 1, pageSize: 20 },
      { scope: program, page: 2, pageSize: 1 },
      { scope: merchant, origin: 'api', page: 1, pageSize: 20 },
      { scope: merchant, objectType: 'payment', page: 2, pageSize: 1 },
      { scope: program, createdFrom: new Date('2026-11-20T10:00:01.000Z'), createdTo: new Date('2026-11-22T00:00:00.000Z'), page: 1, pageSize: 20 },
    ];
    const listed = async () => Promise.all(queries.map(async (query) => ({ ...(await events.list(query)), query })));
    const idsAndCounts = async () =>
      (await listed()).map((page) => ({ count: page.count, ids: (JSON.parse(page.eventsJson) as Event[]).map((event) => event.id) }));
    expect(await idsAndCounts()).toEqual([
      { count: 4, ids: [a, b, c, d] },
      { count: 4, ids: [b] },
      { count: 3, ids: [a, c, d] },
      { count: 2, ids: [d] },
      { count: 3, ids: [b, c, d] },
    ]);

    // 30 days after next month began: this month is past retention, next month is not.
    const now = new Date(nextMonth.getTime() + 30 * DAY_MS + 3_600_000);
    const keptForEver = maintenanceAt(prisma, () => now, { deliveryRetentionDays: 0, eventRetentionDays: 0 });
    expect(await keptForEver.loop.runOnce()).toMatchObject({ eventsDropped: [], eventsHeld: [] });
    await keptForEver.loop.stop();

    const { loop, lines, metrics } = maintenanceAt(prisma, () => now, { deliveryRetentionDays: 0, eventRetentionDays: 30 });
    const month = thisMonth.toISOString().slice(0, 7);
    try {
      const held = await loop.runOnce();
      expect(held).toMatchObject({ eventsDropped: [], eventsHeld: [{ month, pending: 1 }] });
      expect(lines).toContainEqual({
        level: 'warn',
        message: 'partition maintenance kept a month of events past EVENT_RETENTION_DAYS: some of its events have pending deliveries',
        fields: { month, pending: 1 },
      });
      expect(metricValue(await metrics.exposition(), 'herald_event_retention_held_partitions')).toBe(1);
      expect((await listed()).map((page) => page.count)).toEqual([4, 4, 3, 2, 3]);
      // Months were created ahead of the moved clock.
      const ahead = Array.from({ length: 4 }, (_, n) => eventPartitionName(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + n, 1))));
      expect(await attachedPartitions(prisma, 'events')).toEqual(expect.arrayContaining(ahead));

      // c's delivery succeeds: nothing holds this month any more.
      await prisma.$executeRawUnsafe(`UPDATE deliveries SET status = 'succeeded' WHERE id = $1::uuid`, deliveryOf(c));
      const dropped = await loop.runOnce();
      expect(dropped).toMatchObject({ eventsDropped: [{ month, events: 3 }], eventsHeld: [] });
      expect(lines).toContainEqual({
        level: 'info',
        message: 'partition maintenance dropped a month of events past EVENT_RETENTION_DAYS',
        fields: { month, events: 3, retentionDays: 30 },
      });
      const exposition = await metrics.exposition();
      expect(metricValue(exposition, 'herald_event_retention_dropped_partitions_total')).toBe(1);
      expect(metricValue(exposition, 'herald_retention_dropped_rows_total', { table: 'events' })).toBe(3);
      expect(metricValue(exposition, 'herald_event_retention_held_partitions')).toBe(0);

      // The month is gone whole; next month, with d, is still there.
      expect(await attachedPartitions(prisma, 'events')).not.toContain(eventPartitionName(thisMonth));
      expect(await attachedPartitions(prisma, 'events')).toContain(eventPartitionName(nextMonth));
      expect((await prisma.event.findMany({ where: { programId } })).map((row) => row.id)).toEqual([d]);
      // Delivery retention is separate: the deliveries of the dropped events are still stored.
      expect(await prisma.delivery.count({ where: { eventId: { in: [a, b, c, d] } } })).toBe(4);

      // Counts and deep pages are exact: only d is left, in every counter it belongs to.
      expect(await idsAndCounts()).toEqual([
        { count: 1, ids: [d] },
        { count: 1, ids: [] },
        { count: 1, ids: [d] },
        { count: 1, ids: [] },
        { count: 1, ids: [d] },
      ]);
      const dSecond = Math.floor(Date.parse('2026-11-21T08:00:00.500Z') / 1000);
      const buckets = await prisma.$queryRawUnsafe<Array<{ granularity: number; bucket_start: bigint; count: bigint }>>(
        `SELECT granularity, bucket_start, count FROM event_bucket_counts WHERE scope = $1 AND origin = '' AND object_type = '' ORDER BY granularity`,
        `program:${programId}`,
      );
      expect(buckets).toEqual([
        { granularity: 1, bucket_start: BigInt(dSecond), count: 1n },
        { granularity: 60, bucket_start: BigInt(dSecond - (dSecond % 60)), count: 1n },
        { granularity: 86_400, bucket_start: BigInt(dSecond - (dSecond % 86_400)), count: 1n },
      ]);
      const totals = await prisma.$queryRawUnsafe<Array<{ scope: string; origin: string; object_type: string; count: bigint }>>(
        'SELECT scope, origin, object_type, count FROM event_counts WHERE scope IN ($1, $2) ORDER BY 1, 2, 3',
        `merchant:${merchantId}`,
        `program:${programId}`,
      );
      const only = (scope: string, origin: string, objectType: string) =>
        totals.find((row) => row.scope === scope && row.origin === origin && row.object_type === objectType)?.count;
      for (const scope of [`merchant:${merchantId}`, `program:${programId}`]) {
        for (const [origin, objectType] of [
          ['', ''],
          ['api', ''],
          ['', 'payment'],
          ['api', 'payment'],
        ])
          expect(only(scope, origin!, objectType!)).toBe(1n);
        for (const [origin, objectType] of [
          ['', 'refund'],
          ['api', 'refund'],
        ])
          expect(only(scope, origin!, objectType!)).toBe(0n);
      }
      expect(only(`program:${programId}`, 'widget', '')).toBe(0n);

      // A third pass finds nothing more to do.
      expect(await loop.runOnce()).toMatchObject({ created: [], eventsDropped: [], eventsHeld: [] });
    } finally {
      await loop.stop();
    }
  });

  it('rolls the whole drop back, counters included, when a delivery of the month turns pending while the drop waits for its lock', async () => {
    // This month again (the test above dropped it), with one event whose delivery succeeded.
    const realTime = maintenanceAt(prisma, () => new Date(), { deliveryRetentionDays: 0, eventRetentionDays: 0 });
    await realTime.loop.runOnce();
    await realTime.loop.stop();
    const programId = `prg-${randomUUID()}`;
    await tenantRepository(sqlPool(prisma)).createProgram({ id: programId, name: 'Program' });
    await targetRepository(sqlPool(prisma), cipher).upsert(
      { kind: 'program', programId },
      { url: 'https://merchant.example/hooks', auth: { mode: 'none' }, notifications: {}, enabled: true },
    );
    const { deliveries } = await storeEvents(sqlPool(prisma), [
      {
        event: {
          id: `Event-${randomUUID()}`,
          createdAt: '2026-11-20T10:00:00.000Z',
          origin: 'api',
          eventType: 'created',
          objectId: 'o',
          objectType: 'payment',
        },
        programId,
        contentHash: randomUUID(),
      },
    ]);
    const deliveryId = deliveries[0]!.deliveryId;
    await prisma.$executeRawUnsafe(`UPDATE deliveries SET status = 'succeeded' WHERE id = $1::uuid`, deliveryId);
    const events = eventRepository(sqlPool(prisma), { bucketWalkMinOffset: 1 });
    const listed = () => events.list({ scope: { kind: 'program', programId }, page: 1, pageSize: 20 });
    const bucketTotal = async () =>
      (
        await prisma.$queryRawUnsafe<Array<{ n: bigint }>>(
          `SELECT coalesce(sum(count), 0)::bigint AS n FROM event_bucket_counts WHERE scope = $1`,
          `program:${programId}`,
        )
      )[0]!.n;
    const before = { page: await listed(), buckets: await bucketTotal() };
    expect(before.page.count).toBe(1);

    // A reader keeps the drop waiting for its exclusive lock; meanwhile the delivery is replayed.
    const thisMonth = monthStart(new Date());
    const now = new Date(Date.UTC(thisMonth.getUTCFullYear(), thisMonth.getUTCMonth() + 1, 1) + 30 * DAY_MS + 3_600_000);
    const reader = await sqlPool(prisma).connect();
    const { loop } = maintenanceAt(prisma, () => now, { deliveryRetentionDays: 0, eventRetentionDays: 30 });
    try {
      await reader.query('BEGIN');
      await reader.query('SELECT count(*) FROM events');
      const pass = loop.runOnce();
      const waiting = async () =>
        (await reader.query("SELECT 1 FROM pg_locks WHERE relation = 'events'::regclass AND mode = 'AccessExclusiveLock' AND NOT granted")).rowCount! > 0;
      await waitFor(waiting, (waits) => waits, 10_000, 'the drop to wait for its lock on events', 10);
      await prisma.$executeRawUnsafe(`UPDATE deliveries SET status = 'pending' WHERE id = $1::uuid`, deliveryId);
      await reader.query('COMMIT');

      expect(await pass).toMatchObject({ eventsDropped: [], eventsHeld: [{ month: thisMonth.toISOString().slice(0, 7), pending: 1 }] });
      expect(await attachedPartitions(prisma, 'events')).toContain(eventPartitionName(thisMonth));
      expect(await listed()).toEqual(before.page);
      expect(await bucketTotal()).toBe(before.buckets);
    } finally {
      reader.release();
      await loop.stop();
    }
  });
});
