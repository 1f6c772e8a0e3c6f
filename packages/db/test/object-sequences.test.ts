import { randomUUID } from 'node:crypto';
import { waitFor } from '@herald/testing';
import { createDatabasePool, closeDatabasePool, type DatabasePool } from '../src/pool';
import { applyMigrations } from '../src/migrations';
import type { NewEvent } from '../src/repositories/event-ingest-statements';
import { ingestStore } from '../src/repositories/ingest-store';
import { tenantRepository } from '../src/repositories/tenants';
import { useScratch } from './support/scratch';

/**
 * Every stored event's `sequence`: its place among the events of its object (program, merchant,
 * objectType, objectId), from 1, in the order the ingest stored them, gap-free and unique however
 * many ingests of one object run at once.
 */
describe("an object's sequence numbers", () => {
  const scratch = useScratch();
  const programId = 'prg-seq';
  const merchantId = 'mer-seq';
  let pool: DatabasePool;

  beforeEach(async () => {
    const url = await scratch.database();
    await applyMigrations(url);
    // As the events-api's ingest pool: pipelined, with room for every concurrent ingest below.
    pool = createDatabasePool(url, { maxConnections: 20, pipeline: true });
    await tenantRepository(pool).createProgram({ id: programId, name: 'Program' });
    await tenantRepository(pool).createMerchant({ id: merchantId, programId, name: 'Merchant' });
  });
  afterEach(async () => {
    await closeDatabasePool(pool);
  });

  const newEvent = (objectId: string, fields: { id?: string; merchant?: boolean; objectType?: 'payment' | 'refund' } = {}): NewEvent => ({
    event: {
      id: fields.id ?? `Event-${randomUUID()}`,
      createdAt: '2026-11-01T00:00:00.000Z',
      origin: 'api',
      eventType: 'updated',
      objectId,
      objectType: fields.objectType ?? 'payment',
    },
    programId,
    ...(fields.merchant === false ? {} : { merchantId }),
    contentHash: randomUUID(),
  });
  const ingest = async (batch: readonly NewEvent[]) => (await ingestStore(pool).transaction((tx) => tx.insertNewEvents(batch))).created;
  const sequencesOf = async (objectId: string) =>
    (await pool.query<{ id: string; sequence: number }>('SELECT id, sequence FROM events WHERE object_id = $1 ORDER BY sequence', [objectId])).rows;

  it("numbers a batch's events per object, in the batch's order, after the events stored before", async () => {
    const [a1, b1, a2, a3] = [newEvent('a'), newEvent('b'), newEvent('a'), newEvent('a')];
    expect(await ingest([a1!, b1!, a2!, a3!])).toEqual(
      new Map([
        [a1!.event.id, 1],
        [b1!.event.id, 1],
        [a2!.event.id, 2],
        [a3!.event.id, 3],
      ]),
    );
    const a4 = newEvent('a');
    expect(await ingest([a4])).toEqual(new Map([[a4.event.id, 4]]));
    expect((await sequencesOf('a')).map((row) => row.id)).toEqual([a1, a2, a3, a4].map((e) => e!.event.id));
  });

  it('counts an object per program, merchant and objectType: the same objectId elsewhere has numbers of its own', async () => {
    const batch = [newEvent('shared'), newEvent('shared', { merchant: false }), newEvent('shared', { objectType: 'refund' }), newEvent('shared')];
    const created = await ingest(batch);
    expect(batch.map((e) => created.get(e.event.id))).toEqual([1, 1, 1, 2]);
  });

  it('keeps the number of a re-posted event and numbers nothing for it', async () => {
    const first = newEvent('re');
    await ingest([first]);
    const next = newEvent('re');
    // The re-post is not stored again: only the new event is numbered, right after it.
    expect(await ingest([first, next])).toEqual(new Map([[next.event.id, 2]]));
    // A batch of re-posts only numbers nothing either.
    expect(await ingest([next, first])).toEqual(new Map());
    const last = newEvent('re');
    expect(await ingest([last])).toEqual(new Map([[last.event.id, 3]]));
    expect((await sequencesOf('re')).map((row) => row.sequence)).toEqual([1, 2, 3]);
  });

  it('gives the numbers of a rolled-back ingest back', async () => {
    await ingest([newEvent('rb')]);
    await expect(
      ingestStore(pool).transaction(async (tx) => {
        await tx.insertNewEvents([newEvent('rb'), newEvent('rb')]);
        throw new Error('the ingest fails after storing');
      }),
    ).rejects.toThrow('the ingest fails after storing');
    const after = newEvent('rb');
    expect(await ingest([after])).toEqual(new Map([[after.event.id, 2]]));
  });

  it('numbers concurrent ingests of one object without a gap or a repeat, each batch in its own order', async () => {
    // 12 ingests at once, each of 5 events of one object between events of objects of their own.
    const batches = Array.from({ length: 12 }, (_, b) => [newEvent(`own-${b}`), ...Array.from({ length: 5 }, () => newEvent('hot')), newEvent(`own-${b}`)]);
    const results = await Promise.all(batches.map((batch) => ingest(batch)));

    const numbers = results.flatMap((created, b) => batches[b]!.filter((e) => e.event.objectId === 'hot').map((e) => created.get(e.event.id)!));
    expect([...numbers].sort((x, y) => x - y)).toEqual(Array.from({ length: 60 }, (_, n) => n + 1));
    for (const [b, created] of results.entries()) {
      const own = batches[b]!.filter((e) => e.event.objectId === 'hot').map((e) => created.get(e.event.id)!);
      // One batch's events of the object follow each other, in the batch's order.
      expect(own).toEqual(Array.from({ length: 5 }, (_, n) => own[0]! + n));
      expect(batches[b]!.filter((e) => e.event.objectId === `own-${b}`).map((e) => created.get(e.event.id))).toEqual([1, 2]);
    }
    expect((await sequencesOf('hot')).map((row) => row.sequence)).toEqual(Array.from({ length: 60 }, (_, n) => n + 1));
  });

  it('runs again, leaving no gap, when another ingest stores one of its ids under another object between the numbering and the insert', async () => {
    // The other ingest has stored the id, for object "theirs", and not committed yet.
    const contested = `Event-${randomUUID()}`;
    const other = await pool.connect();
    const ours = [newEvent('ours', { id: contested }), newEvent('ours')];
    try {
      await other.query('BEGIN');
      await other.query(
        "INSERT INTO events (id, program_id, merchant_id, created_at, origin, event_type, object_id, object_type, sequence, content_hash) VALUES ($1, $2, $3, now(), 'api', 'created', 'theirs', 'payment', 1, 'theirs')",
        [contested, programId, merchantId],
      );
      // Ours numbers both of its events (the other's row is not visible yet), then waits at the id.
      const stored = ingest(ours);
      await waitFor(
        async () => (await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted")).rows[0]!.n,
        (waiting) => waiting > 0,
        5_000,
        'our ingest to wait for the other at the contested id',
      );
      await other.query('COMMIT');
      // It skips the contested id, which the other stored, and numbers only its second event: 1.
      expect(await stored).toEqual(new Map([[ours[1]!.event.id, 1]]));
    } finally {
      other.release();
    }
    expect((await sequencesOf('ours')).map((row) => row.sequence)).toEqual([1]);
    expect((await pool.query('SELECT last_sequence FROM object_sequences WHERE object_id = $1', ['ours'])).rows).toEqual([{ last_sequence: 1 }]);
  });
});
