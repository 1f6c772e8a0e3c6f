import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { createTestApi } from './support/api';
import { ingestEvent } from './support/events';
import { createFakeWorker } from './support/fake-worker';
import { expectDocumented, type OpenApiDocument } from './support/openapi';

const api = createTestApi();
const worker = createFakeWorker(api);
let document: OpenApiDocument;
beforeAll(async () => {
  document = (await request(api.app).get('/openapi.json').expect(200)).body;
});
afterAll(async () => {
  await worker.close();
  await api.close();
});

// Each test works its own deliveries: jobs another test left waiting are dropped first.
beforeEach(() => api.deliveryQueue.drain(true));

type Tenant = Awaited<ReturnType<typeof api.createTenant>>;
interface Scene extends Tenant {
  programTarget: string;
  merchantTarget: string;
  password: string;
}

/** A fresh tenant with a program target (basic auth, a known password in its URL's query too) and a merchant target. */
async function scene(): Promise<Scene> {
  const tenant = await api.createTenant();
  const password = `pw-${randomUUID()}`;
  const programTarget = await api
    .admin('put', `/programs/${tenant.programId}/notification-target`)
    .send({ url: `https://program.example/hooks?token=${password}`, auth: { mode: 'basic', username: 'program-user', password } })
    .expect(200);
  const merchantTarget = await api
    .admin('put', `/merchants/${tenant.merchantId}/notification-target`)
    .send({ url: 'https://merchant.example/hooks', auth: { mode: 'none' } })
    .expect(200);
  return { ...tenant, programTarget: programTarget.body.id, merchantTarget: merchantTarget.body.id, password };
}

/** Ingests one payment event of the scene's merchant (one delivery per target); returns its id and object id. */
async function ingestPayment(s: Scene): Promise<{ eventId: string; objectId: string }> {
  const event = ingestEvent(s, { objectType: 'payment' });
  await api.ingest(event).expect(201);
  return { eventId: event.id, objectId: event.objectId };
}

async function deliveryTo(eventId: string, targetId: string): Promise<string> {
  const found = await api.prisma.delivery.findFirst({ where: { eventId, targetId } });
  if (!found) throw new Error(`no delivery of ${eventId} to ${targetId}`);
  return found.id;
}

const list = (key: string, query: Record<string, string | number> = {}) => api.merchantGet(key, '/deliveries', query);
const show = (key: string, id: string) => api.merchantGet(key, `/deliveries/${id}`);

describe('GET /deliveries', () => {
  it("lists the merchant key's own callbacks newest first in the page envelope, each with its event's object and last attempt", async () => {
    const s = await scene();
    const first = await ingestPayment(s);
    const second = await ingestPayment(s);
    // The first event's callbacks fail with a timeout, the second's succeed.
    await worker.runAll((job) =>
      job.eventId === first.eventId
        ? { outcome: 'failed', statusCode: undefined, errorKind: 'timeout', errorMessage: 'no answer within 10000 ms' }
        : { outcome: 'succeeded' },
    );

    const res = await list(s.merchantKey.key).expect(200);
    expectDocumented(document, 'merchant', '/deliveries', 'get', res);
    expect(res.body).toMatchObject({ page: 1, pageSize: 20, count: 2, totalPages: 1 });
    expect(res.body.data.map((d: { eventId: string }) => d.eventId)).toEqual([second.eventId, first.eventId]);
    expect(res.body.data[1]).toEqual({
      id: await deliveryTo(first.eventId, s.merchantTarget),
      eventId: first.eventId,
      objectType: 'payment',
      objectId: first.objectId,
      status: 'failed',
      attemptsMade: 1,
      lastAttemptAt: expect.any(String),
      lastStatusCode: null,
      lastErrorKind: 'timeout',
      createdAt: expect.any(String),
      completedAt: expect.any(String),
      waitingFor: null,
    });
    expect(res.body.data[0]).toMatchObject({ status: 'succeeded', lastStatusCode: 200, lastErrorKind: null });
  });

  it("lists a program key's callbacks to its program's own target, never the merchant target's, with no secret in the answer", async () => {
    const s = await scene();
    const { eventId } = await ingestPayment(s);
    await worker.runAll(() => ({ outcome: 'failed' }));

    const res = await list(s.programKey.key).expect(200);
    expect(res.body.data.map((d: { id: string }) => d.id)).toEqual([await deliveryTo(eventId, s.programTarget)]);
    expect(res.body.data[0]).toMatchObject({ status: 'failed', lastStatusCode: 500, lastErrorKind: 'http_status' });
    expect(JSON.stringify(res.body)).not.toContain(s.password);
  });

  it('lists a callback not yet attempted as pending with no last attempt', async () => {
    const s = await scene();
    await ingestPayment(s);
    const res = await list(s.merchantKey.key).expect(200);
    expect(res.body.data[0]).toMatchObject({
      status: 'pending',
      attemptsMade: 0,
      lastAttemptAt: null,
      lastStatusCode: null,
      lastErrorKind: null,
      completedAt: null,
    });
  });

  it('filters by status, eventId, objectId and createdFrom/createdTo, and pages', async () => {
    const s = await scene();
    const failed = await ingestPayment(s);
    const delivered = await ingestPayment(s);
    await worker.runAll((job) => ({ outcome: job.eventId === failed.eventId ? 'failed' : 'succeeded' }));
    const key = s.merchantKey.key;
    const ids = async (query: Record<string, string | number>) => (await list(key, query).expect(200)).body.data.map((d: { eventId: string }) => d.eventId);

    expect(await ids({ status: 'failed' })).toEqual([failed.eventId]);
    expect(await ids({ status: 'succeeded' })).toEqual([delivered.eventId]);
    expect(await ids({ status: 'pending' })).toEqual([]);
    expect(await ids({ eventId: delivered.eventId })).toEqual([delivered.eventId]);
    expect(await ids({ objectId: failed.objectId })).toEqual([failed.eventId]);
    const created = (await api.prisma.delivery.findFirstOrThrow({ where: { eventId: delivered.eventId, targetId: s.merchantTarget } })).createdAt;
    expect(await ids({ createdFrom: created.toISOString() })).toEqual([delivered.eventId]);
    expect(await ids({ createdTo: created.toISOString() })).toEqual([failed.eventId]);
    expect(await ids({ createdFrom: '2000-01-01T00:00:00Z', createdTo: '2000-01-02T00:00:00Z' })).toEqual([]);

    const second = await list(key, { pageSize: 1, page: 2 }).expect(200);
    expect(second.body).toMatchObject({ page: 2, pageSize: 1, count: 2, totalPages: 2 });
    expect(second.body.data.map((d: { eventId: string }) => d.eventId)).toEqual([failed.eventId]);
  });

  it('refuses a bad or unknown query parameter with a 400 problem naming it and how to fix it', async () => {
    const s = await scene();
    const bad = await list(s.merchantKey.key, { status: 'lost' }).expect(400);
    expectDocumented(document, 'merchant', '/deliveries', 'get', bad);
    expect(bad.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(bad.body).toMatchObject({
      type: '/problems/invalid_query',
      errors: [{ parameter: 'status', message: expect.stringMatching(/pending.*succeeded.*failed/) }],
    });

    const unknown = await list(s.merchantKey.key, { targetId: s.programTarget }).expect(400);
    expect(unknown.body.errors).toEqual([expect.objectContaining({ parameter: 'targetId' })]);
    const date = await list(s.merchantKey.key, { createdFrom: 'yesterday' }).expect(400);
    expect(date.body.errors).toEqual([expect.objectContaining({ parameter: 'createdFrom' })]);
    const event = await list(s.merchantKey.key, { eventId: 'not-an-event' }).expect(400);
    expect(event.body.errors).toEqual([expect.objectContaining({ parameter: 'eventId' })]);
  });

  it('refuses a page deeper than EVENTS_MAX_SKIP with page_too_deep, saying to move createdTo instead', async () => {
    const s = await scene();
    const deepest = Math.floor(api.config.eventsList.maxSkip / 100) + 1;
    await list(s.merchantKey.key, { pageSize: 100, page: deepest }).expect(200);
    const res = await list(s.merchantKey.key, { pageSize: 100, page: deepest + 1 }).expect(400);
    expect(res.body).toMatchObject({ type: '/problems/page_too_deep', errors: [{ parameter: 'page' }], maxSkip: api.config.eventsList.maxSkip });
    expect(res.body.detail).toMatch(/createdTo/);
  });

  it('needs the same headers and key as GET /events: 401 without a key or with a revoked one, 400 naming a missing header', async () => {
    const s = await scene();
    const missing = await api.merchantGet(undefined, '/deliveries').expect(401);
    expect(missing.body).toMatchObject({ type: '/problems/unauthorized', header: 'x-api-key' });
    const header = await api.merchantGet(s.merchantKey.key, '/deliveries', {}, { 'Accept-Language': undefined }).expect(400);
    expect(header.body).toMatchObject({ type: '/problems/invalid_header', errors: [{ header: 'Accept-Language' }] });

    await api.admin('delete', `/api-keys/${s.merchantKey.id}`).expect(200);
    const revoked = await list(s.merchantKey.key).expect(401);
    expectDocumented(document, 'merchant', '/deliveries', 'get', revoked);
    await show(s.merchantKey.key, randomUUID()).expect(401);
  });
});

describe('GET /deliveries/{id}', () => {
  it('shows every attempt with its answer as stored, redacted, and the deferrals; no URL, no error message, no credential', async () => {
    const s = await scene();
    const { eventId } = await ingestPayment(s);
    const basic = Buffer.from(`program-user:${s.password}`).toString('base64');
    await worker.runAll(() => ({ outcome: 'retrying', statusCode: 503, errorKind: 'http_status', responseBody: `{"authorization":"Basic ${basic}"}` }));
    const id = await deliveryTo(eventId, s.programTarget);
    await api.prisma.delivery.update({
      where: { id_createdAt: await key(id) },
      data: { deferrals: 2, lastDeferredAt: new Date(), lastDeferralReason: 'breaker_open' },
    });

    const res = await show(s.programKey.key, id).expect(200);
    expectDocumented(document, 'merchant', '/deliveries/{id}', 'get', res);
    expect(res.body).toMatchObject({ id, eventId, status: 'pending', attemptsMade: 1, lastStatusCode: 503, lastErrorKind: 'http_status' });
    expect(res.body.deferrals).toEqual({ count: 2, lastAt: expect.any(String), lastReason: 'breaker_open' });
    expect(res.body.attempts).toEqual([
      {
        number: 1,
        startedAt: expect.any(String),
        durationMs: 12,
        statusCode: 503,
        errorKind: 'http_status',
        responseBody: '{"authorization":"Basic [REDACTED]"}',
      },
    ]);
    expect(JSON.stringify(res.body)).not.toContain(s.password);
    expect(JSON.stringify(res.body)).not.toContain(basic);
    expect(JSON.stringify(res.body)).not.toMatch(/program\.example|targetId/);
  });

  it("answers 404 for another tenant's delivery exactly as for one that does not exist", async () => {
    const s = await scene();
    const other = await scene();
    const { eventId } = await ingestPayment(s);
    const toMerchant = await deliveryTo(eventId, s.merchantTarget);
    const toProgram = await deliveryTo(eventId, s.programTarget);
    await show(s.merchantKey.key, toMerchant).expect(200);
    await show(s.programKey.key, toProgram).expect(200);

    const unknown = await show(s.merchantKey.key, randomUUID()).expect(404);
    expectDocumented(document, 'merchant', '/deliveries/{id}', 'get', unknown);
    const refusals = [
      // Another merchant's key, another program's key.
      await show(other.merchantKey.key, toMerchant).expect(404),
      await show(other.programKey.key, toProgram).expect(404),
      // Within one program: the merchant key never sees the program target's callbacks, nor the program key the merchant's.
      await show(s.merchantKey.key, toProgram).expect(404),
      await show(s.programKey.key, toMerchant).expect(404),
    ];
    for (const res of refusals) {
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ type: unknown.body.type, title: unknown.body.title, status: 404 });
      expect(res.body.detail).toMatch(/^No delivery "/);
    }
    // Nor do the lists of the other tenant show them.
    for (const otherKey of [other.merchantKey.key, other.programKey.key]) {
      expect((await list(otherKey).expect(200)).body).toMatchObject({ count: 0, data: [] });
      expect((await list(otherKey, { eventId }).expect(200)).body.count).toBe(0);
    }
    await show(s.merchantKey.key, 'not-a-uuid').expect(404);
  });
});

/** The primary key of a delivery (id, createdAt): deliveries are partitioned by week. */
async function key(id: string) {
  const { createdAt } = await api.prisma.delivery.findFirstOrThrow({ where: { id } });
  return { id, createdAt };
}
