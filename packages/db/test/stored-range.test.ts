import { randomBytes, randomUUID } from 'node:crypto';
import type { Compilable } from 'kysely';
import { createCredentialsCipher } from '../src/credentials-cipher';
import { eventPartitionName, monthStart } from '../src/event-partitions';
import { applyMigrations } from '../src/migrations';
import { partitionMaintenance, partitionName, weekStart } from '../src/partitions';
import { closeDatabasePool, createDatabasePool, type DatabasePool } from '../src/pool';
import { deliveryAttemptQueries, deliveryAttemptRepository } from '../src/repositories/delivery-attempts';
import { deliveryQueries } from '../src/repositories/deliveries';
import { targetHealthQueries } from '../src/repositories/recorded-target-health';
import { run } from '../src/sql';
import { storedRange, type StoredRange } from '../src/stored-range';
import type { NewEvent } from '../src/repositories/event-ingest-statements';
import { ingestStore } from '../src/repositories/ingest-store';
import { targetRepository } from '../src/repositories/targets';
import { tenantRepository } from '../src/repositories/tenants';
import { useScratch } from './support/scratch';

const DAY_MS = 86_400_000;

/**
 * The worker looks deliveries up by id, which names no partition. Its jobs carry when the ingest
 * stored each delivery and its event (storedAt), and these tests hold the worker's statements to
 * reading only the week and the month that hold them, in the generic plans its pool uses, on a
 * database whose partitions go back months, as one in production does.
 */
describe("the worker's statements within their deliveries' stored range", () => {
  const scratch = useScratch();
  const cipher = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: randomBytes(32) } });
  const programId = 'prg-stored';
  let pool: DatabasePool;
  let targetId: string;

  beforeEach(async () => {
    const url = await scratch.database();
    await applyMigrations(url);
    pool = createDatabasePool(url, { genericPlans: true });
    await tenantRepository(pool).createProgram({ id: programId, name: 'Program' });
    targetId = (
      await targetRepository(pool, cipher).upsert(
        { kind: 'program', programId },
        { url: 'https://merchant.example/hooks', auth: { mode: 'none' }, notifications: {}, enabled: true },
      )
    ).id;
    // The weeks and months of a database in use for a while: older partitions than its current ones.
    await partitionMaintenance(pool).maintain({ now: new Date(Date.now() - 70 * DAY_MS), deliveryRetentionDays: 0 });
  });
  afterEach(async () => {
    await closeDatabasePool(pool);
  });

  /** Stores one event and its delivery as the ingest does; returns the delivery's id and the time the ingest reported. */
  async function ingestOne(): Promise<{ deliveryId: string; eventId: string; storedAt: Date }> {
    const item: NewEvent = {
      event: {
        id: `Event-${randomUUID()}`,
        createdAt: '2026-11-01T00:00:00.000Z',
        origin: 'api',
        eventType: 'created',
        objectId: 'o-1',
        objectType: 'payment',
      },
      programId,
      contentHash: 'hash',
    };
    const deliveryId = randomUUID();
    const storedAt = await ingestStore(pool).transaction(async (tx) => {
      const { storedAt } = await tx.insertNewEvents([item]);
      const ref = {
        deliveryId,
        eventId: item.event.id,
        targetId,
        programId,
        merchantId: null,
        targetOwner: 'program' as const,
        storedAt: storedAt.toISOString(),
      };
      tx.writeAtCommit({ deliveries: [ref], counted: [] });
      return storedAt;
    });
    return { deliveryId, eventId: item.event.id, storedAt };
  }

  /** The partitions of deliveries and events that the statement's generic plan keeps after its initial pruning. */
  async function partitionsRead(statement: Compilable<unknown>): Promise<string[]> {
    const plan = await explained(statement);
    // Only the nodes that ran: a lookup a one-time filter skipped (an ordered target's predecessor, for another target) reads nothing.
    return [
      ...new Set(
        planNodes(plan).flatMap((node) =>
          node['Relation Name']?.match(/^(deliveries|events)_p/) && (node['Actual Loops'] ?? 0) > 0 ? [node['Relation Name']] : [],
        ),
      ),
    ].sort();
  }

  /** The plan the statement ran with, under EXPLAIN ANALYZE, as the pool's prepared statements run. */
  async function explained(statement: Compilable<unknown>): Promise<PlanNode> {
    const { sql, parameters } = statement.compile();
    const client = await pool.connect();
    try {
      // Rolled back: the writing statements run for real under EXPLAIN ANALYZE.
      await client.query('BEGIN');
      await client.query(`PREPARE checked AS ${sql}`);
      // EXECUTE takes no bind parameters: the values go in as literals, typed by the statement's casts.
      const values = parameters.map((value) => (value === null ? 'NULL' : client.escapeLiteral(asText(value)))).join(', ');
      const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE checked(${values})`);
      return rows[0]!['QUERY PLAN'][0].Plan;
    } finally {
      await client.query('ROLLBACK');
      // A prepared statement outlives the transaction.
      await client.query('DEALLOCATE ALL');
      client.release();
    }
  }

  /** The partitions of events that the statement's plan reads from at least once when it runs (its pruning at run time included). */
  async function eventPartitionsExecuted(statement: Compilable<unknown>): Promise<string[]> {
    const plan = await explained(statement);
    return [
      ...new Set(
        planNodes(plan).flatMap((node) => (node['Relation Name']?.startsWith('events_p') && (node['Actual Loops'] ?? 0) > 0 ? [node['Relation Name']] : [])),
      ),
    ].sort();
  }

  it("stores a delivery at its event's ingested_at, the time the ingest reports for the job", async () => {
    const { deliveryId, eventId, storedAt } = await ingestOne();
    const { rows } = await pool.query<{ created_at: Date; ingested_at: Date }>(
      'SELECT d.created_at, e.ingested_at FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = $1',
      [deliveryId],
    );
    expect(rows).toEqual([{ created_at: storedAt, ingested_at: storedAt }]);
    expect((await deliveryAttemptRepository(pool, cipher).loadForAttempts([deliveryId])).get(deliveryId)).toMatchObject({
      delivery: { storedAt },
      eventJson: expect.stringContaining(`{"id":"${eventId}",`),
    });
  });

  it('loads, records attempts and deferrals and the targets’ health reading one week of deliveries and one month of events', async () => {
    const { deliveryId, storedAt } = await ingestOne();
    const ownWeek = partitionName('deliveries', weekStart(storedAt));
    const ownMonth = eventPartitionName(monthStart(storedAt));
    const attempt = {
      delivery_id: deliveryId,
      outcome: 'succeeded' as const,
      started_at: new Date(),
      duration_ms: 5,
      status_code: 200,
      error_kind: null,
      error_message: null,
      response_body: null,
      url: null,
    };
    const deferral = { deliveryId, count: 1, at: new Date(), reason: 'target_busy' as const };
    const writes = (range: StoredRange) => [
      deliveryAttemptQueries.record([attempt], range),
      targetHealthQueries.read([deliveryId], range),
      targetHealthQueries.read([deliveryId], range, true),
      deliveryAttemptQueries.defer([deferral], range),
    ];

    const stored = storedRange([storedAt]);
    expect(await partitionsRead(deliveryAttemptQueries.load([deliveryId], stored))).toEqual([ownWeek, ownMonth].sort());
    for (const statement of writes(stored)) expect(await partitionsRead(statement)).toEqual([ownWeek]);

    // Without it (a job queued before jobs carried storedAt), every week kept.
    const { rows } = await pool.query<{ name: string }>(
      "SELECT inhrelid::regclass::text AS name FROM pg_inherits WHERE inhparent = 'deliveries'::regclass ORDER BY 1",
    );
    expect(rows.length).toBeGreaterThan(5);
    for (const statement of writes(storedRange([undefined]))) expect(await partitionsRead(statement)).toEqual(rows.map((row) => row.name));
  });

  it("marks, clears and stamps the outbox's deliveries reading their week of deliveries only", async () => {
    const { deliveryId, storedAt } = await ingestOne();
    const stored = storedRange([storedAt]);
    const statements = [
      deliveryQueries.markEnqueued([deliveryId], stored),
      deliveryQueries.clearEnqueued([deliveryId], stored),
      deliveryQueries.swept([deliveryId], stored),
      deliveryQueries.checked([deliveryId], [], stored),
      deliveryQueries.checked([], [deliveryId], stored),
    ];
    for (const statement of statements) expect(await partitionsRead(statement)).toEqual([partitionName('deliveries', weekStart(storedAt))]);
  });

  it("sweeps and reconciles deliveries reading their event's month of events only", async () => {
    const { deliveryId, eventId, storedAt } = await ingestOne();
    const ownMonth = eventPartitionName(monthStart(storedAt));
    await pool.query('UPDATE deliveries SET enqueued_at = NULL WHERE id = $1', [deliveryId]);
    expect(await eventPartitionsExecuted(deliveryQueries.unswept({ limit: 10, graceMs: 0 }))).toEqual([ownMonth]);
    await pool.query("UPDATE deliveries SET enqueued_at = now() - interval '1 hour' WHERE id = $1", [deliveryId]);
    expect(await eventPartitionsExecuted(deliveryQueries.stale({ limit: 10, staleMs: 0 }))).toEqual([ownMonth]);

    // An event stored at another time than its delivery is still found, in every month.
    await pool.query("UPDATE events SET ingested_at = ingested_at - interval '1 millisecond' WHERE id = $1", [eventId]);
    expect((await run(pool, deliveryQueries.stale({ limit: 10, staleMs: 0 }))).rows).toEqual([
      expect.objectContaining({ deliveryId, eventId, programId, merchantId: null }),
    ]);
    await pool.query('UPDATE deliveries SET enqueued_at = NULL WHERE id = $1', [deliveryId]);
    expect((await run(pool, deliveryQueries.unswept({ limit: 10, graceMs: 0 }))).rows).toEqual([
      expect.objectContaining({ deliveryId, eventId, programId, merchantId: null }),
    ]);
  });

  it('finds a delivery and its event whatever time its job names: a storedAt that does not match the rows costs a second look, not the delivery', async () => {
    const { deliveryId, eventId, storedAt } = await ingestOne();
    const repository = deliveryAttemptRepository(pool, cipher);
    const weekEarlier = new Date(storedAt.getTime() - 7 * DAY_MS);
    for (const range of [storedRange([weekEarlier]), storedRange([new Date(storedAt.getTime() + 1)]), storedRange([undefined, storedAt])]) {
      expect((await repository.loadForAttempts([deliveryId], range)).get(deliveryId)).toMatchObject({
        delivery: { id: deliveryId, storedAt },
        eventJson: expect.stringContaining(`{"id":"${eventId}",`),
      });
    }
    // A delivery found within the range whose event is not (stored at another time) gets its event too.
    await pool.query("UPDATE events SET ingested_at = ingested_at - interval '1 millisecond' WHERE id = $1", [eventId]);
    expect((await repository.loadForAttempts([deliveryId], storedRange([storedAt]))).get(deliveryId)).toMatchObject({
      delivery: { storedAt },
      eventJson: expect.stringContaining(`{"id":"${eventId}",`),
    });
  });
});

/** A parameter as PostgreSQL's text input reads it: arrays as array literals. */
function asText(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return `{${value.map((item) => (item === null ? 'NULL' : `"${asText(item).replace(/[\\"]/g, '\\$&')}"`)).join(',')}}`;
  return String(value);
}

type PlanNode = { 'Relation Name'?: string; 'Actual Loops'?: number; Plans?: PlanNode[] };

function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}
