import { randomBytes, randomUUID } from 'node:crypto';
import { waitFor } from '@herald/testing';
import { createCredentialsCipher } from '../src/credentials-cipher';
import { createDatabasePool, closeDatabasePool, type DatabasePool } from '../src/pool';
import { eventPartitionName, monthStart } from '../src/event-partitions';
import { applyMigrations } from '../src/migrations';
import { partitionMaintenance } from '../src/partitions';
import { deliveryAttemptQueries, deliveryAttemptRepository } from '../src/repositories/delivery-attempts';
import { isDatabaseUnavailable } from '../src/database-errors';
import { IngestMonthTurnedError } from '../src/repositories/event-ingest';
import type { NewEvent } from '../src/repositories/event-ingest-statements';
import { eventQueries } from '../src/repositories/event-queries';
import { ingestStore } from '../src/repositories/ingest-store';
import { run } from '../src/sql';
import { targetRepository } from '../src/repositories/targets';
import { tenantRepository } from '../src/repositories/tenants';
import { useScratch } from './support/scratch';

/**
 * Events are partitioned by month of ingestion and PostgreSQL keeps an id unique only within a
 * month; these tests hold the ingest to its promise across months: one event per id, a re-post
 * recognised whichever month holds the first.
 */
describe('event ids across months', () => {
  const scratch = useScratch();
  const thisMonth = monthStart(new Date());
  const lastMonth = new Date(Date.UTC(thisMonth.getUTCFullYear(), thisMonth.getUTCMonth() - 1, 1));
  let pool: DatabasePool;
  const programId = 'prg-months';

  beforeEach(async () => {
    const url = await scratch.database();
    await applyMigrations(url);
    pool = createDatabasePool(url);
    await tenantRepository(pool).createProgram({ id: programId, name: 'Program' });
    // Last month's partition, as a database migrated a month ago has it.
    await partitionMaintenance(pool).maintain({ now: new Date(lastMonth.getTime() + 3_600_000), deliveryRetentionDays: 0 });
  });
  afterEach(async () => {
    await closeDatabasePool(pool);
  });

  const newEvent = (id = `Event-${randomUUID()}`, contentHash = 'hash-1'): NewEvent => ({
    event: { id, createdAt: '2026-11-01T00:00:00.000Z', origin: 'api', eventType: 'created', objectId: 'o-1', objectType: 'payment' },
    programId,
    contentHash,
  });
  const rowsOf = async (id: string) =>
    (await pool.query<{ partition: string }>('SELECT tableoid::regclass::text AS partition FROM events WHERE id = $1', [id])).rows.map((row) => row.partition);

  it('recognises an id stored last month: not stored again, and its stored content comes back for the comparison', async () => {
    const event = newEvent();
    await ingestStore(pool).transaction((tx) => tx.insertNewEvents([event]));
    await pool.query('UPDATE events SET ingested_at = $1 WHERE id = $2', [new Date(lastMonth.getTime() + 86_400_000), event.event.id]);
    expect(await rowsOf(event.event.id)).toEqual([eventPartitionName(lastMonth)]);

    const other = newEvent();
    const repost = { ...event, contentHash: 'hash-2' };
    const { inserted, stored } = await ingestStore(pool).transaction(async (tx) => ({
      inserted: (await tx.insertNewEvents([repost, other, other])).created,
      stored: await tx.loadStoredEvents([event.event.id]),
    }));
    expect([...inserted.keys()]).toEqual([other.event.id]);
    // The ingest answers the stored event for the same hash and a conflict for another one.
    expect(stored.get(event.event.id)?.contentHash).toBe('hash-1');
    expect(await rowsOf(event.event.id)).toEqual([eventPartitionName(lastMonth)]);
    expect(await rowsOf(other.event.id)).toEqual([eventPartitionName(thisMonth)]);
  });

  const ingestMonth = async () => (await pool.query<{ month: Date }>('SELECT month FROM event_ingest_month')).rows.map((row) => row.month.toISOString());
  // This test's database only: pg_locks shows the whole server's.
  const advisoryLocks = async () =>
    (
      await pool.query<{ granted: boolean; n: number }>(
        "SELECT granted, count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) GROUP BY granted",
      )
    ).rows;

  it('stores one event when two ingests of the same id straddle the turn of a month: the later waits for the earlier to commit, then finds its event', async () => {
    const event = newEvent();
    // The first ingest started just before the month turned: it holds the ingest month (last
    // month's) as every ingest does, and has stored the id in last month's partition.
    await pool.query('UPDATE event_ingest_month SET month = $1', [lastMonth]);
    const first = await pool.connect();
    try {
      await first.query('BEGIN');
      await run(first, eventQueries.holdIngestMonth());
      await first.query(
        "INSERT INTO events (id, program_id, created_at, origin, event_type, object_id, object_type, sequence, content_hash, ingested_at) VALUES ($1, $2, now(), 'api', 'created', 'o-1', 'payment', 1, 'hash-1', $3)",
        [event.event.id, programId, new Date(thisMonth.getTime() - 1)],
      );

      // The second ingest, in this month, finds the month turned: it waits to advance the month
      // until the first has committed...
      let settled = false;
      const second = ingestStore(pool)
        .transaction(async (tx) => ({ inserted: (await tx.insertNewEvents([event])).created, stored: await tx.loadStoredEvents([event.event.id]) }))
        .finally(() => {
          settled = true;
        });
      await waitFor(advisoryLocks, (locks) => locks.some((lock) => !lock.granted), 5_000, 'the second ingest to wait on the month lock');
      expect(settled).toBe(false);
      expect(await advisoryLocks()).toEqual(expect.arrayContaining([{ granted: false, n: 1 }]));
      expect(await ingestMonth()).toEqual([lastMonth.toISOString()]);

      // ...then finds its event in last month's partition and stores nothing.
      await first.query('COMMIT');
      const { inserted, stored } = await second;
      expect(inserted.size).toBe(0);
      expect(stored.get(event.event.id)?.contentHash).toBe('hash-1');
    } finally {
      first.release();
    }
    expect(await rowsOf(event.event.id)).toEqual([eventPartitionName(lastMonth)]);
    expect(await ingestMonth()).toEqual([thisMonth.toISOString()]);
  });

  it("holds one advisory lock while it stores, whatever the batch's size: a batch of 1,000 cannot fill PostgreSQL's shared lock table", async () => {
    // A database whose last ingest was last month: the first ingest of this month advances it.
    await pool.query('UPDATE event_ingest_month SET month = $1', [lastMonth]);
    const batch = Array.from({ length: 1_000 }, () => newEvent());
    const { inserted, locks } = await ingestStore(pool).transaction(async (tx) => ({
      inserted: (await tx.insertNewEvents(batch)).created,
      locks: await advisoryLocks(),
    }));
    expect(inserted.size).toBe(1_000);
    expect(locks).toEqual([{ granted: true, n: 1 }]);
    expect(await ingestMonth()).toEqual([thisMonth.toISOString()]);
    expect(await advisoryLocks()).toEqual([]);
  });

  it('gives up as database unavailable, storing nothing, when the month keeps turning under the ingest', async () => {
    // A clock stepping back and forth across a month's start, as the ingest sees it: every advance
    // of the month leaves it stale again.
    await pool.query(`
      CREATE FUNCTION stale_month() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.month := '2000-01-01T00:00:00Z'; RETURN NEW; END $$;
      CREATE TRIGGER stale_month BEFORE UPDATE ON event_ingest_month FOR EACH ROW EXECUTE FUNCTION stale_month();
      UPDATE event_ingest_month SET month = month`);
    const event = newEvent();
    const error = await ingestStore(pool)
      .transaction((tx) => tx.insertNewEvents([event]))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(IngestMonthTurnedError);
    expect(isDatabaseUnavailable(error)).toBe(true);
    expect(await rowsOf(event.event.id)).toEqual([]);
  });

  it('stores each id once when concurrent batches carry the same ids in different orders, and none of them deadlocks', async () => {
    const shared = Array.from({ length: 2_000 }, () => newEvent());
    const orders = [shared, [...shared].reverse(), [...shared.slice(1_000), ...shared.slice(0, 1_000)], [...shared].reverse()];
    const results = await Promise.all(orders.map((batch) => ingestStore(pool).transaction((tx) => tx.insertNewEvents(batch))));
    expect(results.reduce((sum, inserted) => sum + inserted.created.size, 0)).toBe(2_000);
    const { rows } = await pool.query<{ n: number; ids: number }>('SELECT count(*)::int AS n, count(DISTINCT id)::int AS ids FROM events');
    expect(rows[0]).toEqual({ n: 2_000, ids: 2_000 });
  });

  it("the worker's load finds a delivery's event whichever month holds it, looking from the newest month back: a recent event's load reads no older month", async () => {
    const cipher = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: randomBytes(32) } });
    const target = await targetRepository(pool, cipher).upsert(
      { kind: 'program', programId },
      { url: 'https://merchant.example/hooks', auth: { mode: 'none' }, notifications: {}, enabled: true },
    );
    const [recent, old] = [newEvent(), newEvent()];
    const deliveryOf = new Map([recent, old].map((item) => [item.event.id, randomUUID()]));
    await ingestStore(pool).transaction(async (tx) => {
      await tx.insertNewEvents([recent, old]);
      tx.writeAtCommit({
        deliveries: [recent, old].map((item) => ({
          deliveryId: deliveryOf.get(item.event.id)!,
          eventId: item.event.id,
          targetId: target.id,
          programId,
          merchantId: null,
          targetOwner: 'program' as const,
        })),
        counted: [],
      });
    });
    await pool.query('UPDATE events SET ingested_at = $1 WHERE id = $2', [new Date(lastMonth.getTime() + 86_400_000), old.event.id]);
    expect(await rowsOf(old.event.id)).toEqual([eventPartitionName(lastMonth)]);

    const work = await deliveryAttemptRepository(pool, cipher).loadForAttempts([...deliveryOf.values()]);
    expect(JSON.parse(work.get(deliveryOf.get(recent.event.id)!)!.eventJson!).id).toBe(recent.event.id);
    expect(JSON.parse(work.get(deliveryOf.get(old.event.id)!)!.eventJson!).id).toBe(old.event.id);

    // Each month kept is one more index probe per delivery for a lookup that goes oldest first;
    // newest first, a recent event is found before any older month is read.
    const { sql, parameters } = deliveryAttemptQueries.load([deliveryOf.get(recent.event.id)!]).compile();
    const { rows } = await pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, [...parameters]);
    const scans = planNodes(rows[0]!['QUERY PLAN'][0].Plan).filter((node) => node['Relation Name'] === eventPartitionName(lastMonth));
    expect(scans.length).toBeGreaterThan(0);
    expect(scans.map((node) => node['Actual Loops'])).toEqual(scans.map(() => 0));
  });
});

type PlanNode = { 'Relation Name'?: string; 'Actual Loops': number; Plans?: PlanNode[] };

function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}
