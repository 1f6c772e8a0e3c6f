import request from 'supertest';
import { EVENT_TYPES, examplePaymentSeriesEvent } from '@herald/domain';
import { createTestApi } from './support/api';
import { ingestEvent } from './support/events';

const api = createTestApi();
afterAll(() => api.close());

async function storedCount(programId: string): Promise<number> {
  return api.prisma.event.count({ where: { programId } });
}

describe('POST /internal/events', () => {
  it('refuses a request without the ingest token with 401', async () => {
    const res = await request(api.app).post('/internal/events').send({});
    expect(res.status).toBe(401);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  });

  it('answers the admin token with a 401 that names the ingest token', async () => {
    const res = await request(api.app).post('/internal/events').set('Authorization', `Bearer ${api.config.adminToken}`).send({});
    expect(res.status).toBe(401);
    expect(res.body.detail).toContain('Authorization: Bearer $INGEST_TOKEN');
  });

  it('stores one event and generates its id and createdAt when absent', async () => {
    const tenant = await api.createTenant();
    const { id: _id, createdAt: _createdAt, ...event } = ingestEvent(tenant);
    const before = Date.now();
    const res = await api.ingest(event);
    expect(res.status).toBe(201);
    expect(res.body.id).toMatch(/^Event-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Date.parse(res.body.createdAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(res.body).not.toHaveProperty('programId');
    expect(res.body).not.toHaveProperty('merchantId');
    expect(await storedCount(tenant.programId)).toBe(1);
  });

  it('stores a complete payment-series event that GET /events returns unchanged', async () => {
    const tenant = await api.createTenant();
    const event = examplePaymentSeriesEvent();
    event.id = `Event-${crypto.randomUUID()}`;
    // The producer sends no sequence: the first event of its object is numbered 1.
    const { sequence: _sequence, ...sent } = event;
    const res = await api.ingest({ ...sent, programId: tenant.programId, merchantId: tenant.merchantId });
    expect(res.status).toBe(201);
    expect(res.body).toEqual(event);
    const listed = await api.listEvents(tenant.merchantKey.key);
    expect(listed.body.data).toEqual([event]);
  });

  it('rejects an invalid event with 400 listing every violation by JSON pointer', async () => {
    const tenant = await api.createTenant();
    const res = await api.ingest(ingestEvent(tenant, { origin: 'fax', objectId: '' }));
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual(['/objectId', '/origin']);
    expect(await storedCount(tenant.programId)).toBe(0);
  });

  it('stores a batch in order and names the batch index of each violation', async () => {
    const tenant = await api.createTenant();
    const good = [ingestEvent(tenant), ingestEvent(tenant), ingestEvent(tenant)];
    const ok = await api.ingest({ events: good });
    expect(ok.status).toBe(201);
    expect(ok.body.events.map((e: { id: string }) => e.id)).toEqual(good.map((e) => e.id));

    const bad = await api.ingest({ events: [ingestEvent(tenant), ingestEvent(tenant, { eventType: 'exploded' })] });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ pointer: '/events/1/eventType', message: `must be one of: ${EVENT_TYPES.join(', ')}` }]);
    expect(await storedCount(tenant.programId)).toBe(3);
  });

  it('refuses a batch holding an event over EVENT_MAX_BYTES (256 KiB) with 400 naming its index, storing nothing', async () => {
    const tenant = await api.createTenant();
    const large = ingestEvent(tenant, { metadata: { blob: 'x'.repeat(300 * 1024) } });
    const res = await api.ingest({ events: [ingestEvent(tenant), large] });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.errors).toEqual([{ pointer: '/events/1', message: expect.stringContaining('an event may be at most 262144 bytes (EVENT_MAX_BYTES)') }]);
    expect(await storedCount(tenant.programId)).toBe(0);
  });

  it('stores nothing of a batch when one event names an unknown merchant (422)', async () => {
    const tenant = await api.createTenant();
    const res = await api.ingest({ events: [ingestEvent(tenant), ingestEvent({ programId: tenant.programId, merchantId: 'ghost' })] });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ field: 'merchantId', index: 1 });
    expect(await storedCount(tenant.programId)).toBe(0);
  });

  it('answers 422 naming an unknown programId', async () => {
    const res = await api.ingest(ingestEvent({ programId: 'no-such-program' }));
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ field: 'programId', index: 0 });
  });

  it('refuses a merchant of another program', async () => {
    const a = await api.createTenant();
    const b = await api.createTenant();
    const res = await api.ingest(ingestEvent({ programId: a.programId, merchantId: b.merchantId }));
    expect(res.status).toBe(422);
  });

  it('stores text that array literals escape (quotes, backslashes, braces, commas, NULL) exactly as sent', async () => {
    const tenant = await api.createTenant();
    const awkward = 'NULL';
    const events = [
      ingestEvent(tenant, { objectId: awkward, context: 'a "quoted", {braced} \\ back\\slash', metadata: { 'k,"}': 'NULL', n: 'ünï 🎉' } }),
      ingestEvent(tenant, { objectId: '"', context: '', metadata: { empty: '' } }),
      ingestEvent(tenant, { objectId: 'plain' }),
    ];
    const res = await api.ingest({ events });
    expect(res.status).toBe(201);
    const listed = await api.listEvents(tenant.programKey.key, { pageSize: 10 });
    const byId = new Map((listed.body.data as Array<{ id: string }>).map((e) => [e.id, e]));
    for (const { programId: _p, merchantId: _m, ...sent } of events) expect(byId.get(sent.id)).toEqual({ ...sent, sequence: 1 });
    expect(byId.get(events[2]!.id)).not.toHaveProperty('context');
    expect(byId.get(events[2]!.id)).not.toHaveProperty('metadata');
  });

  it('returns the stored event for a retry with the same content, creating nothing', async () => {
    const tenant = await api.createTenant();
    const event = ingestEvent(tenant);
    expect((await api.ingest(event)).status).toBe(201);
    const retry = await api.ingest({ ...event, objectType: event.objectType });
    expect(retry.status).toBe(200);
    expect(retry.body.id).toBe(event.id);
    expect(await storedCount(tenant.programId)).toBe(1);
    const page = await api.listEvents(tenant.merchantKey.key);
    expect(page.body.count).toBe(1);
  });

  it('answers 409 when an existing id comes with different content, storing nothing of the batch', async () => {
    const tenant = await api.createTenant();
    const event = ingestEvent(tenant);
    await api.ingest(event).expect(201);
    const res = await api.ingest({ events: [ingestEvent(tenant), { ...event, eventType: 'deleted' }] });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ eventId: event.id, index: 1 });
    expect(await storedCount(tenant.programId)).toBe(1);
  });

  it('refuses a batch that repeats an id', async () => {
    const tenant = await api.createTenant();
    const event = ingestEvent(tenant);
    const res = await api.ingest({ events: [event, event] });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ pointer: '/events/1/id' })]);
  });

  it('refuses free content nested deeper than the limit', async () => {
    const tenant = await api.createTenant();
    let deep: unknown = 'leaf';
    for (let i = 0; i < 40; i += 1) deep = { next: deep };
    const res = await api.ingest(ingestEvent(tenant, { data: [deep] }));
    expect(res.status).toBe(400);
    expect(res.body.errors[0].pointer).toMatch(/^\/data\/0(\/next)+$/);
  });

  it('refuses a batch of more than 1,000 events', async () => {
    const tenant = await api.createTenant();
    const res = await api.ingest({ events: Array.from({ length: 1001 }, () => ingestEvent(tenant)) });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].pointer).toBe('/events');
  });

  it('answers a body that is not a JSON object with 400', async () => {
    expect((await api.ingest([1, 2])).status).toBe(400);
    const text = await request(api.app)
      .post('/internal/events')
      .set('Authorization', `Bearer ${api.config.ingestToken}`)
      .set('Content-Type', 'application/json')
      .send('{"events": [');
    expect(text.status).toBe(400);
  });
});
