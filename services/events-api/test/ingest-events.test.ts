// The ingest use case with fakes at its seams (no database, no queue): what it stores, routes and
// publishes, and what it refuses. ingest.test.ts and fan-out.test.ts cover it end to end.
import { numberedEvent, type IngestTransaction, type KnownTenants, type NewEvent, type StoredEvent } from '@herald/db';
import { EventConflictError, UnknownTenantError, ValidationError, type DeliveryRef, type Event, type RoutingTarget } from '@herald/domain';
import { createOutboxPublisher } from '@herald/outbox';
import { createIngest, type IngestDependencies } from '../src/ingest/ingest-events';
import { ingestEvent } from './support/events';

const tenant = { programId: 'p1', merchantId: 'm1' };

const target = (fields: Partial<RoutingTarget> & Pick<RoutingTarget, 'id'>): RoutingTarget => ({
  programId: 'p1',
  merchantId: null,
  objectTypes: [],
  eventTypes: [],
  enabled: true,
  deleted: false,
  ...fields,
});

/** What the fake database holds once a transaction committed. */
interface Tables {
  events: Map<string, StoredEvent>;
  deliveries: DeliveryRef[];
  counted: NewEvent[];
}

/**
 * An in-memory IngestStore: a transaction works on a copy of the tables that replaces them when
 * the work resolves (its writeAtCommit writes made then), and is dropped when it throws. Records
 * the order of the calls.
 */
class FakeStore {
  committed: Tables = { events: new Map(), deliveries: [], counted: [] };
  readonly calls: string[] = [];
  programs = new Set(['p1', 'p2']);
  merchants = new Map([
    ['m1', 'p1'],
    ['m2', 'p2'],
  ]);
  targets: RoutingTarget[] = [target({ id: 'program-target' }), target({ id: 'merchant-target', merchantId: 'm1' })];
  /** When the next transaction stores its rows, as the database would tell it. */
  storedAt = new Date('2026-11-24T10:00:00.123Z');

  async transaction<T>(work: (tx: IngestTransaction) => Promise<T>): Promise<T> {
    const staged: Tables = { events: new Map(this.committed.events), deliveries: [...this.committed.deliveries], counted: [...this.committed.counted] };
    const call = (name: string) => this.calls.push(name);
    const tx: IngestTransaction = {
      findTenantsAndTargets: async (programIds, merchantIds): Promise<{ known: KnownTenants; targets: RoutingTarget[] }> => {
        call('findTenantsAndTargets');
        return {
          known: {
            programIds: new Set(programIds.filter((id) => this.programs.has(id))),
            merchantPrograms: new Map(merchantIds.flatMap((id) => (this.merchants.has(id) ? [[id, this.merchants.get(id)!] as const] : []))),
          },
          targets: this.targets.filter((t) => (t.merchantId === null ? programIds.includes(t.programId) : merchantIds.includes(t.merchantId))),
        };
      },
      insertNewEvents: async (batch) => {
        call('insertNewEvents');
        const created = new Map<string, number>();
        for (const item of batch) {
          if (staged.events.has(item.event.id)) continue;
          // Numbered as the database does: after the events of the same object stored before.
          const sameObject = (e: StoredEvent['event']) => e.objectType === item.event.objectType && e.objectId === item.event.objectId;
          const sequence = [...staged.events.values()].filter((stored) => sameObject(stored.event)).length + 1;
          staged.events.set(item.event.id, {
            event: numberedEvent({ ...item.event, createdAt: new Date(item.event.createdAt).toISOString() }, sequence),
            contentHash: item.contentHash,
          });
          created.set(item.event.id, sequence);
        }
        return { created, storedAt: this.storedAt };
      },
      loadStoredEvents: async (ids) => {
        call('loadStoredEvents');
        return new Map(ids.flatMap((id) => (staged.events.has(id) ? [[id, staged.events.get(id)!] as const] : [])));
      },
      writeAtCommit: ({ deliveries, counted }) => {
        call('writeAtCommit');
        last = () => {
          staged.deliveries.push(...deliveries);
          staged.counted.push(...counted);
        };
      },
    };
    let last = () => {};
    const result = await work(tx);
    last();
    this.committed = staged;
    call('commit');
    return result;
  }
}

function setUp(overrides: Partial<IngestDependencies> = {}) {
  const store = new FakeStore();
  const published: DeliveryRef[][] = [];
  const ingested: number[] = [];
  let ids = 0;
  const ingest = createIngest({
    store,
    publish: async (refs) => {
      store.calls.push('publish');
      published.push([...refs]);
    },
    metrics: { eventsIngested: (count) => ingested.push(count) },
    eventMaxBytes: 2_048,
    newId: () => `id-${++ids}`,
    now: () => new Date('2026-11-22T10:00:00.000Z'),
    ...overrides,
  });
  return { store, ingest, published, ingested };
}

const targetsOf = (refs: readonly DeliveryRef[], eventId: string) =>
  refs
    .filter((r) => r.eventId === eventId)
    .map((r) => r.targetId)
    .sort();

describe('the ingest use case', () => {
  it('stores new events and creates a delivery for each target the routing rule picks, then publishes them after the commit', async () => {
    const { store, ingest, published, ingested } = setUp();
    const payment = ingestEvent(tenant, { objectType: 'payment' });
    const subscription = ingestEvent(tenant, { objectType: 'subscription' });
    const programOnly = ingestEvent({ programId: 'p1' }, { objectType: 'refund' });

    const result = await ingest({ events: [payment, subscription, programOnly] });

    expect(result).toMatchObject({ batch: true, createdCount: 3 });
    expect(result.events.map((e) => e.id)).toEqual([payment.id, subscription.id, programOnly.id]);
    const deliveries = store.committed.deliveries;
    expect(targetsOf(deliveries, payment.id)).toEqual(['merchant-target', 'program-target']);
    expect(targetsOf(deliveries, subscription.id)).toEqual(['program-target']);
    expect(targetsOf(deliveries, programOnly.id)).toEqual(['program-target']);
    expect(deliveries.find((d) => d.eventId === payment.id)).toMatchObject({ programId: 'p1', merchantId: 'm1' });
    expect(deliveries.find((d) => d.eventId === programOnly.id)).toMatchObject({ programId: 'p1', merchantId: null });
    expect(new Set(deliveries.map((d) => d.deliveryId)).size).toBe(4);
    // Each job names when the transaction stored its delivery and event: the worker's partition key.
    expect(new Set(deliveries.map((d) => d.storedAt))).toEqual(new Set([store.storedAt.toISOString()]));
    // The answer tells the producer, per event in input order, what each delivery goes to.
    const told = (eventId: string) =>
      deliveries
        .filter((d) => d.eventId === eventId)
        .map((d) => d.deliveryId)
        .sort();
    expect(result.deliveries.map((e) => e.eventId)).toEqual([payment.id, subscription.id, programOnly.id]);
    expect(result.deliveries.map((e) => e.deliveries.map((d) => d.deliveryId).sort())).toEqual([told(payment.id), told(subscription.id), told(programOnly.id)]);
    expect(result.deliveries[0]!.deliveries.map((d) => `${d.targetOwner} ${d.targetId}`).sort()).toEqual([
      'merchant merchant-target',
      'program program-target',
    ]);
    expect(published).toEqual([deliveries]);
    expect(ingested).toEqual([3]);
    // Counters last inside the transaction (their row locks are the contended ones); publish after the commit.
    expect(store.calls).toEqual(['findTenantsAndTargets', 'insertNewEvents', 'writeAtCommit', 'commit', 'publish']);
    expect(store.committed.counted.map((c) => c.event.id)).toEqual([payment.id, subscription.id, programOnly.id]);
  });

  it('answers one event as one event, and stores the fields as sent', async () => {
    const { ingest, store } = setUp();
    const input = ingestEvent(tenant, { createdAt: '2026-01-01T01:00:00+01:00', metadata: { order: '42' } });
    const result = await ingest(input);
    const { programId: _p, merchantId: _m, ...fields } = input;
    expect(result).toMatchObject({ batch: false, createdCount: 1, events: [{ ...fields, createdAt: '2026-01-01T00:00:00.000Z' }] });
    expect(result.events).toHaveLength(1);
    expect(store.committed.events.get(input.id)?.event).toEqual(result.events[0]);
  });

  it('gives an event sent without id and createdAt a new id and the time it was received', async () => {
    const { ingest } = setUp();
    const { id: _id, createdAt: _createdAt, ...input } = ingestEvent(tenant);
    const [event] = (await ingest(input)).events as [Event];
    expect(event.id).toBe('Event-id-1');
    expect(event.createdAt).toBe('2026-11-22T10:00:00.000Z');
  });

  it('returns a re-posted event as stored and creates no delivery for it, nor counts it again', async () => {
    const { ingest, store, published, ingested } = setUp();
    const input = ingestEvent(tenant);
    const first = await ingest(input);
    const deliveriesBefore = [...store.committed.deliveries];
    store.calls.length = 0;

    const again = await ingest({ ...input });

    // Its deliveries were created the first time; this request created none.
    expect(again).toEqual({ ...first, createdCount: 0, deliveries: [{ eventId: input.id, deliveries: [] }] });
    expect(first.deliveries[0]!.deliveries).toHaveLength(2);
    expect(store.committed.deliveries).toEqual(deliveriesBefore);
    expect(store.committed.counted).toHaveLength(1);
    expect(published.at(-1)).toEqual([]);
    expect(ingested).toEqual([1, 0]);
  });

  it('stores a batch of new and re-posted events, routing only the new ones', async () => {
    const { ingest, store } = setUp();
    const old = ingestEvent(tenant);
    await ingest(old);
    const fresh = ingestEvent(tenant);
    const result = await ingest({ events: [old, fresh] });
    expect(result.createdCount).toBe(1);
    expect(store.committed.deliveries.filter((d) => d.eventId === old.id)).toHaveLength(2);
    expect(store.committed.deliveries.filter((d) => d.eventId === fresh.id)).toHaveLength(2);
  });

  it('refuses the whole batch when an event id is stored with other content: nothing stored, nothing published', async () => {
    const { ingest, store, published, ingested } = setUp();
    const stored = ingestEvent(tenant);
    await ingest(stored);
    const before = store.committed;
    published.length = 0;

    const error = await ingest({ events: [ingestEvent(tenant), { ...stored, objectId: 'changed' }] }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(EventConflictError);
    expect(error).toMatchObject({ code: 'event_conflict', name: 'EventConflictError', eventId: stored.id, index: 1 });
    expect(store.committed).toBe(before);
    expect(published).toEqual([]);
    expect(ingested).toEqual([1]);
  });

  it('refuses a batch naming a program that does not exist, or a merchant of another program', async () => {
    const { ingest, store, published } = setUp();
    await expect(ingest({ events: [ingestEvent(tenant), ingestEvent({ programId: 'nope' })] })).rejects.toMatchObject({
      constructor: UnknownTenantError,
      code: 'unknown_tenant',
      field: 'programId',
      value: 'nope',
      index: 1,
    });
    await expect(ingest(ingestEvent({ programId: 'p1', merchantId: 'm2' }))).rejects.toMatchObject({ field: 'merchantId', value: 'm2', index: 0 });
    await expect(ingest(ingestEvent({ programId: 'p1', merchantId: 'unknown' }))).rejects.toBeInstanceOf(UnknownTenantError);
    expect(store.committed.events.size).toBe(0);
    // Nothing is inserted: the tenants are checked first (the targets are read in the same round trip).
    expect(store.calls).toEqual(['findTenantsAndTargets', 'findTenantsAndTargets', 'findTenantsAndTargets']);
    expect(published).toEqual([]);
  });

  it('refuses an invalid body, or a batch repeating an id, before touching the store', async () => {
    const { ingest, store } = setUp();
    await expect(ingest({ ...ingestEvent(tenant), origin: 'nowhere' })).rejects.toBeInstanceOf(ValidationError);
    await expect(ingest({ events: 'none' })).rejects.toBeInstanceOf(ValidationError);
    const event = ingestEvent(tenant);
    await expect(ingest({ events: [event, event] })).rejects.toMatchObject({
      violations: [expect.objectContaining({ pointer: '/events/1/id', keyword: 'uniqueItems' })],
    });
    expect(store.calls).toEqual([]);
  });

  it('refuses an event whose JSON is over EVENT_MAX_BYTES, naming its batch index, before touching the store', async () => {
    const { ingest, store } = setUp();
    const small = ingestEvent(tenant);
    // The limit counts UTF-8 bytes: 700 three-byte characters are 2,100 bytes in 700 characters.
    const large = ingestEvent(tenant, { context: '€'.repeat(700) });
    const error = await ingest({ events: [small, large, ingestEvent(tenant)] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).violations).toEqual([
      {
        pointer: '/events/1',
        keyword: 'maxBytes',
        message: expect.stringMatching(/^is \d+ bytes as JSON; an event may be at most 2048 bytes \(EVENT_MAX_BYTES\)/),
      },
    ]);
    await expect(ingest(large)).rejects.toMatchObject({ violations: [expect.objectContaining({ pointer: '', keyword: 'maxBytes' })] });
    expect(store.calls).toEqual([]);
  });

  it('counts an event as its callback carries it: a space after each : and , in data and metadata, numbers in plain decimal', async () => {
    const { ingest } = setUp();
    // Its data is 92 bytes as JSON.stringify writes it, 2,170 as stored: seven numbers of 301 digits.
    const large = ingestEvent(tenant, { data: Array.from({ length: 7 }, () => ({ n: 1e300 })) });
    await expect(ingest(large)).rejects.toMatchObject({
      violations: [expect.objectContaining({ keyword: 'maxBytes', message: expect.stringMatching(/^is 2\d{3} bytes as JSON/) })],
    });
  });

  it('takes an event of exactly EVENT_MAX_BYTES, its sequence number counted at its largest', async () => {
    const { ingest } = setUp();
    const probe = ingestEvent(tenant, { context: '' });
    const { programId: _p, merchantId: _m, ...callback } = probe;
    const bytes = Buffer.byteLength(JSON.stringify({ ...callback, sequence: 2_147_483_647 }), 'utf8');
    const result = await ingest(ingestEvent(tenant, { id: probe.id, createdAt: probe.createdAt, context: 'x'.repeat(2_048 - bytes) }));
    expect(result.createdCount).toBe(1);
  });

  it('creates no delivery for a target that is switched off, deleted or filtered out', async () => {
    const { ingest, store } = setUp();
    store.targets = [target({ id: 'program-target', enabled: false }), target({ id: 'merchant-target', merchantId: 'm1', eventTypes: ['refunded'] })];
    await ingest(ingestEvent(tenant, { eventType: 'created' }));
    store.targets = [target({ id: 'program-target', deleted: true })];
    await ingest(ingestEvent(tenant));
    expect(store.committed.deliveries).toEqual([]);
    expect(store.committed.events.size).toBe(2);
  });

  it('succeeds when the queue refuses the jobs, and hands the deliveries to the sweeper', async () => {
    const cleared: string[] = [];
    const warnings: string[] = [];
    const outbox = createOutboxPublisher({
      producer: { enqueue: () => Promise.reject(new Error('Redis is not connected')) },
      deliveries: {
        clearEnqueued: async (refs) => void cleared.push(...refs.map((r) => r.deliveryId)),
        markEnqueued: async () => {},
      },
      logger: { warn: (message: string) => void warnings.push(message) },
    });
    const { ingest, store } = setUp({ publish: outbox.publish });

    const result = await ingest(ingestEvent(tenant));

    expect(result.createdCount).toBe(1);
    expect(cleared.sort()).toEqual(store.committed.deliveries.map((d) => d.deliveryId).sort());
    expect(cleared).toHaveLength(2);
    expect(warnings).toEqual([expect.stringContaining('the sweeper will enqueue them')]);
  });

  it('succeeds when neither the queue nor the database takes the hand-over, leaving the deliveries to the reconciler', async () => {
    const warnings: string[] = [];
    const outbox = createOutboxPublisher({
      producer: { enqueue: () => Promise.reject(new Error('Redis is not connected')) },
      deliveries: { clearEnqueued: () => Promise.reject(new Error('database gone')), markEnqueued: async () => {} },
      logger: { warn: (message: string) => void warnings.push(message) },
    });
    const { ingest } = setUp({ publish: outbox.publish });
    await expect(ingest(ingestEvent(tenant))).resolves.toMatchObject({ createdCount: 1 });
    expect(warnings).toEqual([expect.stringContaining('the reconciler will enqueue them')]);
  });
});
