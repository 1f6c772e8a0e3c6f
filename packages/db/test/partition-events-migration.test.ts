import { randomBytes, randomUUID } from 'node:crypto';
import { createPrismaClient, sqlPool } from '../src/prisma-client';
import { createCredentialsCipher } from '../src/credentials-cipher';
import { eventPartitionName, monthStart } from '../src/event-partitions';
import { applyMigrations } from '../src/migrations';
import type { NewEvent } from '../src/repositories/event-ingest-statements';
import type { EventListQuery } from '../src/repositories/event-list-statements';
import { eventRepository } from '../src/repositories/events';
import { ingestStore } from '../src/repositories/ingest-store';
import { targetRepository } from '../src/repositories/targets';
import { tenantRepository } from '../src/repositories/tenants';
import { withTodaysTables } from './support/older-database';
import { useScratch } from './support/scratch';
// @herald/testing depends on @herald/db, so this package reaches its helpers by path.
import { storeEvents } from '../../testing/src';

const MIGRATION = '20261126000000_partition_events';
const cipher = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: randomBytes(32) } });

/** Every column of the three tables, in a stable order, as the partitioned tables must hold them. */
const EVENT_ROWS = `SELECT id, program_id, merchant_id, created_at, source_system, origin, event_type, object_id, object_type, metadata, data, context,
  content_hash, ingested_at FROM events ORDER BY id`;
const DELIVERY_ROWS = `SELECT id, event_id, target_id, status, attempts_made, last_status_code, last_error, enqueued_at, queue_checked_at,
  deferrals, last_deferred_at, last_deferral_reason, created_at, updated_at, completed_at FROM deliveries ORDER BY id`;
const ATTEMPT_ROWS = `SELECT id, delivery_id, delivery_created_at, number, started_at, duration_ms, status_code, error_kind, error_message, response_body, url
  FROM delivery_attempts ORDER BY id`;

const monthsAgo = (n: number) => new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() - n, 1));

describe(`migration ${MIGRATION}`, () => {
  const scratch = useScratch();

  it('moves every event of an existing database into monthly partitions, keeps deliveries and attempts, and GET /events answers the same', async () => {
    // The database as the migration meets it: 120 events ingested over the last 4 months, a
    // program and a merchant target, so 240 deliveries, half of them with an attempt.
    const url = await scratch.database();
    await applyMigrations(url, scratch.repositoryMigrationsUpTo(MIGRATION, { including: false }));
    const prisma = createPrismaClient(url);
    try {
      const pool = sqlPool(prisma);
      const programId = 'prg-old';
      const merchantId = 'mer-old';
      await tenantRepository(pool).createProgram({ id: programId, name: 'Program' });
      await tenantRepository(pool).createMerchant({ id: merchantId, programId, name: 'Merchant' });
      const targets = targetRepository(pool, cipher);
      await withTodaysTables(pool, async () => {
        for (const owner of [{ kind: 'program', programId } as const, { kind: 'merchant', programId, merchantId } as const]) {
          await targets.upsert(owner, { url: 'https://merchant.example/hooks', auth: { mode: 'none' }, notifications: {}, enabled: true });
        }
      });
      const start = Date.parse('2026-09-01T00:00:00.000Z');
      const batch: NewEvent[] = Array.from({ length: 120 }, (_, n) => ({
        event: {
          id: `Event-${randomUUID()}`,
          createdAt: new Date(start + n * 41_000).toISOString(),
          origin: n % 3 === 0 ? 'api' : 'widget',
          eventType: 'created',
          objectId: `o-${n}`,
          objectType: n % 2 === 0 ? 'payment' : 'refund',
          ...(n % 4 === 0 ? { metadata: { order: String(n) }, data: [{ amount: n }], context: 'ctx', sourceSystem: 'subscription-module' } : {}),
        },
        programId,
        merchantId,
        contentHash: randomUUID(),
      }));
      await withTodaysTables(pool, () => storeEvents(pool, batch));
      await prisma.$executeRawUnsafe(`
        WITH numbered AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM events)
        UPDATE events e SET ingested_at = date_trunc('month', now(), 'UTC') - make_interval(months => (numbered.n % 4)::int) + make_interval(hours => numbered.n::int)
        FROM numbered WHERE numbered.id = e.id`);
      await prisma.$executeRawUnsafe(`
        INSERT INTO delivery_attempts (delivery_id, delivery_created_at, number, started_at, duration_ms, status_code, error_kind, error_message, url)
        SELECT id, created_at, 1, created_at, 12, 500, 'http_status', 'HTTP 500', 'https://merchant.example/hooks' FROM deliveries WHERE target_id IN (SELECT id FROM notification_targets WHERE merchant_id IS NULL)`);

      // A small walk threshold, so that deep pages go through the bucket counters as they do live.
      const events = eventRepository(pool, { bucketWalkMinOffset: 10 });
      const queries: EventListQuery[] = [
        { scope: { kind: 'merchant', programId, merchantId }, page: 1, pageSize: 25 },
        { scope: { kind: 'merchant', programId, merchantId }, page: 4, pageSize: 25 },
        { scope: { kind: 'program', programId }, origin: 'api', objectType: 'payment', page: 2, pageSize: 5 },
        { scope: { kind: 'program', programId }, createdFrom: new Date('2026-09-01T00:30:00.000Z'), page: 2, pageSize: 20 },
        { scope: { kind: 'program', programId }, eventType: 'created', page: 3, pageSize: 10 },
      ];
      const listed = async () => Promise.all(queries.map((query) => events.list(query)));
      const rowsOf = async (sql: string) => (await pool.query(sql)).rows;
      const before = {
        lists: await withTodaysTables(pool, listed),
        events: await rowsOf(EVENT_ROWS),
        deliveries: await rowsOf(DELIVERY_ROWS),
        attempts: await rowsOf(ATTEMPT_ROWS),
      };
      expect(before.events).toHaveLength(120);
      expect(before.deliveries).toHaveLength(240);
      expect(before.attempts).toHaveLength(120);
      expect(before.lists[0]!.count).toBe(120);

      expect(await applyMigrations(url, scratch.repositoryMigrationsUpTo(MIGRATION, { including: true }))).toEqual({
        applied: [MIGRATION],
        alreadyApplied: expect.any(Array),
      });

      expect(await rowsOf(EVENT_ROWS)).toEqual(before.events);
      expect(await rowsOf(DELIVERY_ROWS)).toEqual(before.deliveries);
      expect(await rowsOf(ATTEMPT_ROWS)).toEqual(before.attempts);
      expect(await withTodaysTables(pool, listed)).toEqual(before.lists);

      // Monthly partitions from the oldest event's month to 3 months ahead, each with its own
      // unique index on id; each event sits in the month of its ingested_at.
      const partitions = await rowsOf(`SELECT c.relname AS name,
          (SELECT count(*) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = c.oid AND x.indisunique AND i.relname = c.relname || '_id_key') AS id_keys
        FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid WHERE h.inhparent = 'events'::regclass ORDER BY 1`);
      const months = Array.from({ length: 7 }, (_, n) => monthsAgo(3 - n));
      expect(partitions).toEqual(months.map((month) => ({ name: eventPartitionName(month), id_keys: '1' })));
      expect(
        await rowsOf(
          `SELECT id FROM events WHERE tableoid::regclass::text <> 'events_p' || to_char(date_trunc('month', ingested_at, 'UTC') AT TIME ZONE 'UTC', 'YYYYMMDD')`,
        ),
      ).toEqual([]);
      expect(await rowsOf("SELECT 1 FROM pg_class WHERE relname LIKE '%unpartitioned%'")).toEqual([]);
      expect(await rowsOf("SELECT 1 FROM pg_constraint WHERE conname = 'deliveries_event_id_fkey'")).toEqual([]);

      // Ingest goes on, once the later migrations are applied too: a re-posted old event (3 months
      // back) is recognised, a new one is stored in this month.
      await applyMigrations(url);
      const oldest = batch.find((item) => before.events.find((row) => row.id === item.event.id)!.ingested_at < monthsAgo(2))!;
      const fresh: NewEvent = { ...batch[1]!, event: { ...batch[1]!.event, id: `Event-${randomUUID()}` } };
      const { created: inserted } = await ingestStore(pool).transaction((tx) => tx.insertNewEvents([oldest, fresh]));
      // The second event of its object (batch[1]'s): numbered after the one the migration numbered 1.
      expect(inserted).toEqual(new Map([[fresh.event.id, 2]]));
      expect(await rowsOf(`SELECT tableoid::regclass::text AS partition FROM events WHERE id = '${fresh.event.id}'`)).toEqual([
        { partition: eventPartitionName(monthStart(new Date())) },
      ]);
    } finally {
      await prisma.$disconnect();
    }
  });
});
