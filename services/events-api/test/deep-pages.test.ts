import { eventRepository } from '@herald/db';
import type { Event } from '@herald/domain';
import { createTestApi } from './support/api';
import { ingestEvent } from './support/events';

const api = createTestApi();
afterAll(() => api.close());

// Past 2,000 events the page start is found through the day/minute/second bucket counters; these
// tests compare those pages with the order computed here, whatever order the events arrived in.
describe('GET /events deep pages', () => {
  const ORIGINS = ['api', 'widget', 'automated'];
  const TYPES = ['payment', 'refund'];
  let tenant: Awaited<ReturnType<typeof api.createTenant>>;
  let events: Array<ReturnType<typeof ingestEvent>>;

  beforeAll(async () => {
    tenant = await api.createTenant();
    const base = Date.parse('2025-12-30T23:59:58.500Z');
    // 2,700 events over several days, minutes and seconds, many sharing a second or a millisecond.
    events = Array.from({ length: 2700 }, (_, i) =>
      ingestEvent(tenant, {
        createdAt: new Date(base + (i % 900) * 7_919 + Math.floor(i / 900) * 86_400_000 * 1.5).toISOString(),
        origin: ORIGINS[i % 3],
        objectType: TYPES[i % 2],
      }),
    );
    // Shuffled arrival, so that late events land before earlier ones (backdated inserts).
    const arrival = [...events].sort((a, b) => (a.id < b.id ? -1 : 1));
    for (let i = 0; i < arrival.length; i += 1000) await api.ingest({ events: arrival.slice(i, i + 1000) }).expect(201);
  }, 60_000);

  function expectedOrder(filter: (e: ReturnType<typeof ingestEvent>) => boolean): string[] {
    return events
      .filter(filter)
      .sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : Date.parse(a.createdAt) - Date.parse(b.createdAt)))
      .map((e) => e.id);
  }

  it.each([20, 21, 25, 27])('serves page %i of 100 exactly as the full order says', async (pageNumber) => {
    const res = await api.listEvents(tenant.merchantKey.key, { page: pageNumber, pageSize: 100 });
    expect(res.status).toBe(200);
    const order = expectedOrder(() => true);
    expect(res.body.count).toBe(2700);
    expect(res.body.data.map((e: { id: string }) => e.id)).toEqual(order.slice((pageNumber - 1) * 100, pageNumber * 100));
  });

  it('finds filtered pages (origin and objectType) through the counters of that filter', async () => {
    // Walk the counters from the first page on, so that every filtered page goes through them.
    const walking = eventRepository(api.databases.ingest, { bucketWalkMinOffset: 0 });
    const order = expectedOrder((e) => e.origin === 'api' && e.objectType === 'payment');
    expect(order.length).toBe(450);
    const scope = { kind: 'program' as const, programId: tenant.programId };
    const listed: string[] = [];
    for (let page = 1; page <= 5; page += 1) {
      const result = await walking.list({ scope, origin: 'api', objectType: 'payment', page, pageSize: 97 });
      expect(result.count).toBe(450);
      listed.push(...(JSON.parse(result.eventsJson) as Event[]).map((e) => e.id));
    }
    expect(listed).toEqual(order);
  });

  it('serves every page of size 7 past the threshold in order, without gaps or repeats', async () => {
    const order = expectedOrder(() => true);
    const seen: string[] = [];
    for (let page = 286; page <= 386; page += 1) {
      const res = await api.listEvents(tenant.merchantKey.key, { page, pageSize: 7 });
      seen.push(...res.body.data.map((e: { id: string }) => e.id));
    }
    expect(seen).toEqual(order.slice(285 * 7));
  });
});

// createdFrom and createdTo are counted through the same counters (the events before each bound),
// and a deep page under createdFrom is found by walking them past the events before it.
describe('GET /events under createdFrom and createdTo', () => {
  let tenant: Awaited<ReturnType<typeof api.createTenant>>;
  let events: Array<ReturnType<typeof ingestEvent>>;
  const base = Date.parse('2025-12-30T23:59:58.500Z');

  beforeAll(async () => {
    tenant = await api.createTenant();
    // 2,400 events over three days, many in the same second or millisecond, backdated out of order.
    events = Array.from({ length: 2400 }, (_, i) =>
      ingestEvent(tenant, {
        createdAt: new Date(base + (i % 800) * 3_001 + Math.floor(i / 800) * 86_400_000 + (i % 7) * 130).toISOString(),
        origin: ['api', 'widget', 'automated'][i % 3],
        objectType: ['payment', 'refund'][i % 2],
      }),
    );
    const arrival = [...events].sort((a, b) => (a.id < b.id ? -1 : 1));
    for (let i = 0; i < arrival.length; i += 1000) await api.ingest({ events: arrival.slice(i, i + 1000) }).expect(201);
  }, 60_000);

  function expectedOrder(filter: (e: ReturnType<typeof ingestEvent>) => boolean): string[] {
    return events
      .filter(filter)
      .sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : Date.parse(a.createdAt) - Date.parse(b.createdAt)))
      .map((e) => e.id);
  }
  const at = (offsetMs: number): string => new Date(base + offsetMs).toISOString();
  const within = (from?: string, to?: string) => (e: ReturnType<typeof ingestEvent>) =>
    (from === undefined || Date.parse(e.createdAt) >= Date.parse(from)) && (to === undefined || Date.parse(e.createdAt) < Date.parse(to));

  it.each([
    // Bounds inside a second (sub-second parts on the index), on whole seconds, minutes and days, across days.
    [at(1_234), at(86_400_000 + 61_777)],
    [at(1_500), undefined],
    [undefined, at(2 * 86_400_000 + 600_123)],
    ['2025-12-31T00:00:00.000Z', '2026-01-01T00:00:00.000Z'],
    ['2025-12-31T00:01:00.000Z', '2025-12-31T00:01:01.000Z'],
    ['1970-01-01T00:00:00Z', '2999-01-01T00:00:00Z'],
    ['2026-01-01T00:00:00.000Z', '2025-12-31T00:00:00.000Z'],
  ])('counts exactly from %s to %s', async (createdFrom, createdTo) => {
    const query = { ...(createdFrom ? { createdFrom } : {}), ...(createdTo ? { createdTo } : {}), pageSize: 100 };
    const res = await api.listEvents(tenant.merchantKey.key, query);
    expect(res.status).toBe(200);
    const order = expectedOrder(within(createdFrom, createdTo));
    expect(res.body.count).toBe(order.length);
    expect(res.body.data.map((e: { id: string }) => e.id)).toEqual(order.slice(0, 100));
  });

  it('counts exactly with the spec’s filters and a range', async () => {
    const [createdFrom, createdTo] = [at(3_333), at(86_400_000 + 1_000_000)];
    const res = await api.listEvents(tenant.programKey.key, { origin: 'widget', objectType: 'refund', createdFrom, createdTo });
    const order = expectedOrder((e) => e.origin === 'widget' && e.objectType === 'refund' && within(createdFrom, createdTo)(e));
    expect(res.body.count).toBe(order.length);
    expect(res.body.data.map((e: { id: string }) => e.id)).toEqual(order.slice(0, 20));
  });

  it('finds deep pages under createdFrom and createdTo through the counters, in order', async () => {
    const walking = eventRepository(api.databases.ingest, { bucketWalkMinOffset: 0 });
    const [createdFrom, createdTo] = [new Date(at(1_234)), new Date(at(2 * 86_400_000 + 600_123))];
    const order = expectedOrder(within(createdFrom.toISOString(), createdTo.toISOString()));
    const scope = { kind: 'merchant' as const, programId: tenant.programId, merchantId: tenant.merchantId };
    const listed: string[] = [];
    for (let page = 1; page * 97 < order.length + 97; page += 1) {
      const result = await walking.list({ scope, createdFrom, createdTo, page, pageSize: 97 });
      expect(result.count).toBe(order.length);
      listed.push(...(JSON.parse(result.eventsJson) as Event[]).map((e) => e.id));
    }
    expect(listed).toEqual(order);
  });

  it('serves a page past the threshold under createdFrom exactly as the full order says', async () => {
    const createdFrom = at(700);
    const order = expectedOrder(within(createdFrom));
    const res = await api.listEvents(tenant.merchantKey.key, { createdFrom, page: 22, pageSize: 100 });
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(order.length);
    expect(res.body.data.map((e: { id: string }) => e.id)).toEqual(order.slice(2100, 2200));
  });
});
