import { randomBytes, randomUUID } from 'node:crypto';
import { createPrismaClient, sqlPool, type PrismaClient } from '../src/prisma-client';
import { createCredentialsCipher } from '../src/credentials-cipher';
import { applyMigrations } from '../src/migrations';
import { partitionName, weekStart } from '../src/partitions';
import { deliveryAttemptRepository } from '../src/repositories/delivery-attempts';
import type { NewEvent } from '../src/repositories/event-ingest-statements';
import type { EventListQuery } from '../src/repositories/event-list-statements';
import { eventRepository } from '../src/repositories/events';
import { targetRepository } from '../src/repositories/targets';
import { tenantRepository } from '../src/repositories/tenants';
import { withTodaysTables } from './support/older-database';
import { useScratch } from './support/scratch';
// @herald/testing depends on @herald/db, so this package reaches its helpers by path.
import { storeEvents } from '../../testing/src';

const MIGRATION = '20261125000000_partition_deliveries';
const DAY_MS = 86_400_000;
const cipher = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: randomBytes(32) } });

/** Every column of both tables, in a stable order, as text (the partitioned tables must hold the same values). */
const DELIVERY_ROWS = `SELECT id, event_id, target_id, status, attempts_made, last_status_code, last_error, enqueued_at, queue_checked_at,
  deferrals, last_deferred_at, last_deferral_reason, created_at, updated_at, completed_at FROM deliveries ORDER BY id`;
const ATTEMPT_ROWS = `SELECT id, delivery_id, number, started_at, duration_ms, status_code, error_kind, error_message, response_body, url
  FROM delivery_attempts ORDER BY id`;

/**
 * A database at the migration before the partitioning, holding a program with a merchant, both
 * with a target, 90 events (180 deliveries) whose deliveries were created over the last 5 weeks in
 * every status, and attempts for most of them.
 */
async function oldDatabaseWithData(
  scratch: ReturnType<typeof useScratch>,
): Promise<{ url: string; prisma: PrismaClient; merchantId: string; programId: string }> {
  const url = await scratch.database();
  await applyMigrations(url, scratch.repositoryMigrationsUpTo(MIGRATION, { including: false }));
  const prisma = createPrismaClient(url);
  const tenants = tenantRepository(sqlPool(prisma));
  const programId = 'prg-old';
  const merchantId = 'mer-old';
  await tenants.createProgram({ id: programId, name: 'Program' });
  await tenants.createMerchant({ id: merchantId, programId, name: 'Merchant' });
  const targets = targetRepository(sqlPool(prisma), cipher);
  await withTodaysTables(sqlPool(prisma), async () => {
    for (const owner of [{ kind: 'program', programId } as const, { kind: 'merchant', programId, merchantId } as const]) {
      await targets.upsert(owner, { url: 'https://merchant.example/hooks', auth: { mode: 'none' }, notifications: {}, enabled: true });
    }
  });
  const start = Date.parse('2026-10-01T00:00:00.000Z');
  const batch: NewEvent[] = Array.from({ length: 90 }, (_, n) => ({
    event: {
      id: `Event-${randomUUID()}`,
      createdAt: new Date(start + n * 37_000).toISOString(),
      origin: n % 3 === 0 ? 'api' : 'widget',
      eventType: 'created',
      objectId: `o-${n}`,
      objectType: n % 2 === 0 ? 'payment' : 'refund',
    },
    programId,
    merchantId,
    contentHash: randomUUID(),
  }));
  await withTodaysTables(sqlPool(prisma), () => storeEvents(sqlPool(prisma), batch));
  // Spread the deliveries over 5 weeks back and over every status, as a live database would have them.
  await prisma.$executeRawUnsafe(`
    WITH numbered AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM deliveries)
    UPDATE deliveries d SET
      created_at = now() - make_interval(days => (numbered.n % 5)::int * 7 + 1),
      status = (ARRAY['pending', 'succeeded', 'failed']::delivery_status[])[numbered.n % 3 + 1],
      attempts_made = numbered.n % 3
    FROM numbered WHERE numbered.id = d.id`);
  await prisma.$executeRawUnsafe(`
    INSERT INTO delivery_attempts (delivery_id, number, started_at, duration_ms, status_code, error_kind, error_message, response_body, url)
    SELECT d.id, n, d.created_at + make_interval(mins => n), 10 * n, CASE WHEN n = 2 AND d.status = 'succeeded' THEN 200 ELSE 500 END,
           'http_status', 'HTTP 500', '{"error":"down"}', 'https://merchant.example/hooks'
    FROM deliveries d CROSS JOIN generate_series(1, 2) n WHERE n <= d.attempts_made`);
  return { url, prisma, merchantId, programId };
}

describe(`migration ${MIGRATION}`, () => {
  const scratch = useScratch();

  it('moves every delivery and attempt of an existing database into weekly partitions, and GET /events answers the same', async () => {
    const { url, prisma, merchantId, programId } = await oldDatabaseWithData(scratch);
    try {
      // A small walk threshold, so that page 3 goes through the bucket counters as deep pages do.
      const events = eventRepository(sqlPool(prisma), { bucketWalkMinOffset: 10 });
      const queries: EventListQuery[] = [
        { scope: { kind: 'merchant', programId, merchantId }, page: 1, pageSize: 20 },
        { scope: { kind: 'merchant', programId, merchantId }, page: 3, pageSize: 20 },
        { scope: { kind: 'program', programId }, origin: 'api', objectType: 'payment', page: 2, pageSize: 5 },
        { scope: { kind: 'program', programId }, createdFrom: new Date('2026-10-01T00:20:00.000Z'), page: 1, pageSize: 20 },
      ];
      const listed = async () => Promise.all(queries.map((query) => events.list(query)));
      const pool = sqlPool(prisma);
      const rowsOf = async (sql: string) => (await pool.query(sql)).rows;
      const [eventsBefore, deliveriesBefore, attemptsBefore] = [await withTodaysTables(pool, listed), await rowsOf(DELIVERY_ROWS), await rowsOf(ATTEMPT_ROWS)];
      expect(deliveriesBefore).toHaveLength(180);
      expect(attemptsBefore).toHaveLength(180);
      expect(eventsBefore[0]!.count).toBe(90);

      expect(await applyMigrations(url, scratch.repositoryMigrationsUpTo(MIGRATION, { including: true }))).toEqual({
        applied: [MIGRATION],
        alreadyApplied: expect.any(Array),
      });

      expect(await rowsOf(DELIVERY_ROWS)).toEqual(deliveriesBefore);
      expect(await rowsOf(ATTEMPT_ROWS)).toEqual(attemptsBefore);
      expect(await withTodaysTables(pool, listed)).toEqual(eventsBefore);
      // Each attempt sits in its delivery's week.
      expect(
        await rowsOf(`SELECT a.id FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
                      WHERE a.delivery_created_at <> d.created_at OR a.tableoid::regclass::text <> replace(d.tableoid::regclass::text, 'deliveries_', 'delivery_attempts_')`),
      ).toEqual([]);

      // Both tables are partitioned by week, from the oldest delivery's week to 4 weeks ahead.
      const partitions = await rowsOf(`SELECT c.relname AS name, i.inhparent::regclass::text AS parent FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                                       WHERE i.inhparent IN ('deliveries'::regclass, 'delivery_attempts'::regclass) ORDER BY 2, 1`);
      const first = weekStart(new Date(Date.now() - 29 * DAY_MS)).getTime();
      const weeks = Array.from({ length: (weekStart(new Date()).getTime() - first) / (7 * DAY_MS) + 5 }, (_, n) => new Date(first + n * 7 * DAY_MS));
      expect(partitions).toEqual([
        ...weeks.map((week) => ({ name: partitionName('deliveries', week), parent: 'deliveries' })),
        ...weeks.map((week) => ({ name: partitionName('delivery_attempts', week), parent: 'delivery_attempts' })),
      ]);
      expect(await rowsOf("SELECT 1 FROM pg_class WHERE relname LIKE '%unpartitioned%'")).toEqual([]);

      // The worker keeps recording attempts of migrated deliveries, numbered on, with new ids.
      const pending = deliveriesBefore.find((row) => row.status === 'pending' && row.attempts_made === 0)!;
      const [recorded] = await withTodaysTables(sqlPool(prisma), () =>
        deliveryAttemptRepository(sqlPool(prisma), cipher).recordAttempts([
          { deliveryId: pending.id, attempt: { startedAt: new Date(), durationMs: 5, statusCode: 200 }, outcome: 'succeeded' },
        ]),
      );
      expect(recorded).toMatchObject({ number: 1 });
      const [newest] = await rowsOf(`SELECT id, delivery_created_at FROM delivery_attempts WHERE delivery_id = '${pending.id}'`);
      expect(BigInt(newest.id)).toBeGreaterThan(BigInt(attemptsBefore.at(-1)!.id));
      expect(newest.delivery_created_at).toEqual(pending.created_at);
    } finally {
      await prisma.$disconnect();
    }
  });

  it('converts an empty database too, with the current week and 4 ahead', async () => {
    const url = await scratch.database();
    await applyMigrations(url);
    const prisma = createPrismaClient(url);
    try {
      const { rows } = await sqlPool(prisma).query(
        "SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'deliveries'::regclass ORDER BY 1",
      );
      const first = weekStart(new Date()).getTime();
      expect(rows.map((row) => row.name)).toEqual(Array.from({ length: 5 }, (_, n) => partitionName('deliveries', new Date(first + n * 7 * DAY_MS))));
    } finally {
      await prisma.$disconnect();
    }
  });
});
