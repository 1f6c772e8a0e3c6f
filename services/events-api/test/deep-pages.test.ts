import { eventRepository } from '@herald/db';
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
    const walking = eventRepository(api.prisma, { bucketWalkMinOffset: 0 });
    const order = expectedOrder((e) => e.origin === 'api' && e.objectType === 'payment');
    expect(order.length).toBe(450);
    const scope = { kind: 'program' as const, programId: tenant.programId };
    const listed: string[] = [];
    for (let page = 1; page <= 5; page += 1) {
      const result = await walking.list({ scope, origin: 'api', objectType: 'payment', page, pageSize: 97 });
      expect(result.count).toBe(450);
      listed.push(...result.events.map((e) => e.id));
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
