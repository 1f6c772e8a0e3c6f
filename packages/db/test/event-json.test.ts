import type { Event } from '@herald/domain';
import { createDatabasePool, closeDatabasePool, type DatabasePool } from '../src/pool';
import { applyMigrations } from '../src/migrations';
import type { NewEvent } from '../src/repositories/event-ingest-statements';
import { eventJsonBytes } from '../src/repositories/event-json';
import { eventRepository } from '../src/repositories/events';
import { ingestStore } from '../src/repositories/ingest-store';
import { tenantRepository } from '../src/repositories/tenants';
import { useScratch } from './support/scratch';

/**
 * GET /events sends the JSON PostgreSQL writes for its page (eventJson); callbacks and the ingest's
 * answer write events with toEvent and JSON.stringify. Both must say the same thing of every event.
 */
describe("the page's JSON, written by PostgreSQL", () => {
  const scratch = useScratch();
  let pool: DatabasePool;
  const programId = 'prg-json';

  beforeEach(async () => {
    const url = await scratch.database();
    await applyMigrations(url);
    // Not UTC: createdAt must still be written in UTC.
    const database = new URL(url).pathname.slice(1);
    const admin = createDatabasePool(url);
    await admin.query(`ALTER DATABASE "${database}" SET timezone = 'Asia/Kolkata'`);
    await closeDatabasePool(admin);
    pool = createDatabasePool(url);
    await tenantRepository(pool).createProgram({ id: programId, name: 'Program' });
  });
  afterEach(async () => {
    await closeDatabasePool(pool);
  });

  // Any JSON in metadata and data: what the store writes back, not what the ingest's schemas accept.
  const stored = (event: { id: string; createdAt: string; objectId: string } & Record<string, unknown>): NewEvent => ({
    event: { origin: 'api', eventType: 'created', objectType: 'payment', ...event } as unknown as Event,
    programId,
    contentHash: event.id,
  });
  /** Stores the events and counts them, as the ingest does. */
  const store = (events: NewEvent[]) =>
    ingestStore(pool).transaction(async (tx) => {
      await tx.insertNewEvents(events);
      tx.writeAtCommit({ deliveries: [], counted: events });
    });
  const list = (page = 1) => eventRepository(pool).list({ scope: { kind: 'program', programId }, page, pageSize: 20 });
  /** The events as toEvent reads them back and JSON.stringify writes them, oldest first. */
  const writtenByNode = async (ids: string[]) => {
    const loaded = await ingestStore(pool).transaction((tx) => tx.loadStoredEvents(ids));
    return [...loaded.values()].map((row) => row.event).sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  };

  it('holds the same fields, in the same order, with the same values as toEvent', async () => {
    const events = [
      stored({ id: 'Event-minimal', createdAt: '2026-11-01T00:00:00.000Z', objectId: 'o-1' }),
      stored({
        id: 'Event-"quoted"\\back',
        createdAt: '2026-11-01T12:30:00.007+05:30',
        sourceSystem: 'src "a" \\ b',
        origin: 'widget',
        eventType: 'updated',
        objectId: 'o-2\n\t\u0001',
        objectType: 'refund',
        metadata: { b: 'x', a: 'y', '10': 'z', '9': 'w', 'key": "with, separators': 'v": "1, 2' },
        data: {
          amount: 1.5,
          tiny: -0.001,
          large: 1e21,
          whole: 12345678901234,
          nothing: null,
          list: [1, 'two', { three: [true, false] }, []],
          text: 'ü 😀 \u2028 \u001f',
          empty: {},
        },
        context: 'ctx "q" \\',
      }),
      stored({ id: 'Event-first-year', createdAt: '0001-01-01T00:00:00.001Z', objectId: 'o-3' }),
      stored({ id: 'Event-last-year', createdAt: '9999-12-31T23:59:59.999Z', objectId: 'o-4', data: { only: 'data' } }),
    ];
    await store(events);

    const page = await list();
    expect(page.count).toBe(4);
    const fromPostgres = JSON.parse(page.eventsJson) as Event[];
    // Re-written by JSON.stringify: equal text means equal fields, order and values.
    expect(JSON.stringify(fromPostgres)).toBe(JSON.stringify(await writtenByNode(events.map((e) => e.event.id))));
    expect(fromPostgres.map((e) => e.createdAt)).toEqual([
      '0001-01-01T00:00:00.001Z',
      '2026-11-01T00:00:00.000Z',
      '2026-11-01T07:00:00.007Z',
      '9999-12-31T23:59:59.999Z',
    ]);
    expect(Object.keys(fromPostgres[2]!)).toEqual([
      'id',
      'createdAt',
      'sourceSystem',
      'origin',
      'eventType',
      'objectId',
      'objectType',
      'sequence',
      'metadata',
      'data',
      'context',
    ]);
  });

  it('is as long as eventJsonBytes says, the size the ingest holds to EVENT_MAX_BYTES', async () => {
    const events = [
      stored({ id: 'Event-plain', createdAt: '2026-11-01T00:00:00.000Z', objectId: 'o-1' }),
      stored({
        id: 'Event-numbers',
        createdAt: '2026-11-01T00:00:01.000Z',
        objectId: 'o-2',
        metadata: { 'a "b"': 'ü €', c: '\n' },
        data: [
          { big: 1e300, tiny: 5e-324, negative: -1.5e-7, wide: 1.2345e25, list: [1e21, -2e22, 0, -0, 0.1, 123456789012345680000, 1e-6, 1.5e-6] },
          { nested: { deep: [[], {}, [1e-7, { x: null, y: true }]] }, empty: [] },
        ],
      }),
      stored({ id: 'Event-empty', createdAt: '2026-11-01T00:00:02.000Z', objectId: 'o-3', metadata: {}, data: [] }),
    ];
    await store(events);
    // A page of one event is its text in brackets.
    const written = await Promise.all(
      events.map(
        async (_, i) =>
          Buffer.byteLength((await eventRepository(pool).list({ scope: { kind: 'program', programId }, page: i + 1, pageSize: 1 })).eventsJson, 'utf8') - 2,
      ),
    );
    // Each event is the first of its object: sequence 1.
    expect(events.map((e) => eventJsonBytes({ ...e.event, sequence: 1 }))).toEqual(written);
    // Before it is numbered (the ingest's check), its sequence counts at its largest, 10 digits.
    expect(events.map((e) => eventJsonBytes(e.event))).toEqual(written.map((bytes) => bytes + 9));
    // JSON.stringify's size would understate the second by hundreds of bytes.
    expect(written[1]! - Buffer.byteLength(JSON.stringify(events[1]!.event))).toBeGreaterThan(600);
  });

  it('leaves out a field stored as a JSON null, as toEvent does', async () => {
    const event = stored({ id: 'Event-null-data', createdAt: '2026-11-01T00:00:00.000Z', objectId: 'o-1', data: { x: 1 }, metadata: { m: '1' } });
    await store([event]);
    await pool.query(`UPDATE events SET data = 'null'::jsonb, metadata = 'null'::jsonb`);

    const [listed] = JSON.parse((await list()).eventsJson) as Event[];
    expect(listed).toEqual({
      id: 'Event-null-data',
      createdAt: '2026-11-01T00:00:00.000Z',
      origin: 'api',
      eventType: 'created',
      objectId: 'o-1',
      objectType: 'payment',
      sequence: 1,
    });
    expect(JSON.stringify(listed)).toBe(JSON.stringify((await writtenByNode([event.event.id]))[0]));
  });

  it('is an empty array when there are no events, or the page is past the last', async () => {
    expect(await list()).toEqual({ count: 0, eventsJson: '[]' });
    const event = stored({ id: 'Event-only', createdAt: '2026-11-01T00:00:00.000Z', objectId: 'o-1' });
    await store([event]);
    expect(await list(2)).toEqual({ count: 1, eventsJson: '[]' });
  });
});
