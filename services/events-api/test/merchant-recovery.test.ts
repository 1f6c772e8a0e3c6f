// POST /deliveries/recover and GET /deliveries/recoveries/{id}: the merchant's own recovery of the
// callbacks its target missed, on the real PostgreSQL and Redis, the delivery queue worked by the
// fake worker (the events-api may not import the delivery-worker; merchant-recovery-e2e.test.ts
// runs the real one against a real receiver).
import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { deliveryRepository, recoveryRepository, targetOwnerKey } from '@herald/db';
import { createLogger } from '@herald/logging';
import { createOutboxPublisher, createRecovery } from '@herald/outbox';
import { createDeliveryProducer, createRedisConnection, pingRedis } from '@herald/queue';
import { closedPort } from '@herald/testing';
import request from 'supertest';
import { createTestApi, type TestApi } from './support/api';
import { ingestEvent } from './support/events';
import { createFakeWorker } from './support/fake-worker';
import { expectDocumented, type OpenApiDocument } from './support/openapi';

const api = createTestApi();
const worker = createFakeWorker(api);
// One recovery queues at most 2 callbacks here, to see the bound at work.
const bounded = createTestApi({ RECOVERY_MAX_DELIVERIES: '2' });
const boundedWorker = createFakeWorker(bounded);
let document: OpenApiDocument;
beforeAll(async () => {
  document = (await request(api.app).get('/openapi.json').expect(200)).body;
});
afterAll(async () => {
  await Promise.all([worker.close(), boundedWorker.close()]);
  await Promise.all([api.close(), bounded.close()]);
});

// Each test works its own deliveries: jobs another test left waiting are dropped first.
beforeEach(() => Promise.all([api.deliveryQueue.drain(true), bounded.deliveryQueue.drain(true)]));

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
/** A time `ms` before now, as RFC 3339. */
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

type Tenant = Awaited<ReturnType<TestApi['createTenant']>>;
interface Scene extends Tenant {
  merchantTarget: string;
  password: string;
}

/** A fresh tenant whose merchant has a target with Basic auth and a token in its URL's query (neither may ever be answered). */
async function scene(on: TestApi = api): Promise<Scene> {
  const tenant = await on.createTenant();
  const password = `pw-${randomUUID()}`;
  const target = await on
    .admin('put', `/merchants/${tenant.merchantId}/notification-target`)
    .send({ url: `https://merchant.example/hooks?token=${password}`, auth: { mode: 'basic', username: 'shop', password } })
    .expect(200);
  return { ...tenant, merchantTarget: target.body.id, password };
}

/** Ingests one payment event of the scene's merchant, created `createdAgo` ms ago; returns its id. */
async function ingestPayment(s: Tenant, createdAgo = MINUTE, on: TestApi = api, fields: Record<string, unknown> = {}): Promise<string> {
  const event = ingestEvent(s, { objectType: 'payment', createdAt: ago(createdAgo), ...fields });
  await on.ingest(event).expect(201);
  return event.id;
}

/** A POST of the merchant API with the five headers every request carries. */
function merchantPost(on: TestApi, key: string | undefined, path: string, body: unknown) {
  let req = request(on.app)
    .post(path)
    .set('Content-Type', 'application/json')
    .set('Accept-Language', 'en-US')
    .set('Origin', 'https://shop.example')
    .set('User-Agent', 'herald-tests/1.0');
  if (key !== undefined) req = req.set('x-api-key', key);
  return req.send(JSON.stringify(body));
}

const recover = (key: string | undefined, body: unknown, on: TestApi = api) => merchantPost(on, key, '/deliveries/recover', body);
const progress = (key: string, id: string, on: TestApi = api) => on.merchantGet(key, `/deliveries/recoveries/${id}`);

/** The target's deliveries by event id: status and attempts. */
async function deliveriesOf(targetId: string, on: TestApi = api) {
  const rows = await on.prisma.delivery.findMany({ where: { targetId } });
  return new Map(rows.map((d) => [d.eventId, d]));
}

describe('POST /deliveries/recover', () => {
  it('sends failed callbacks once more, leaves delivered and pending ones alone, and reports the progress until every one is delivered', async () => {
    const s = await scene();
    const failed = [await ingestPayment(s, 3 * MINUTE), await ingestPayment(s, 2 * MINUTE)];
    const delivered = await ingestPayment(s, 2 * MINUTE);
    await worker.runAll((job) => ({ outcome: failed.includes(job.eventId) ? 'failed' : 'succeeded' }));
    const pending = await ingestPayment(s, MINUTE);

    const res = await recover(s.merchantKey.key, { from: ago(10 * MINUTE) }).expect(202);
    expectDocumented(document, 'merchant', '/deliveries/recover', 'post', res);
    expect(res.headers.location).toBe(`/deliveries/recoveries/${res.body.id}`);
    expect(res.body).toMatchObject({
      status: 'running',
      complete: true,
      queued: 2,
      neverSent: 0,
      pending: 2,
      sent: 0,
      delivered: 0,
      failed: 0,
      finishedAt: null,
    });
    expect(res.body.coveredTo).toBe(res.body.to);

    // The failed two are pending again, with their jobs; the delivered and the pending one are untouched.
    const before = await deliveriesOf(s.merchantTarget);
    expect(failed.map((id) => before.get(id)?.status)).toEqual(['pending', 'pending']);
    expect(before.get(delivered)).toMatchObject({ status: 'succeeded', attemptsMade: 1 });
    expect(before.get(pending)).toMatchObject({ status: 'pending', attemptsMade: 0 });
    const worked = await worker.runAll(() => ({ outcome: 'succeeded' }));
    // The pending event's own job (from its ingest) and the two recovered ones; the delivered one is not sent again.
    expect(worked.sort()).toEqual([before.get(failed[0]!)!.id, before.get(failed[1]!)!.id, before.get(pending)!.id].sort());

    const after = await progress(s.merchantKey.key, res.body.id).expect(200);
    expectDocumented(document, 'merchant', '/deliveries/recoveries/{id}', 'get', after);
    expect(after.body).toMatchObject({
      id: res.body.id,
      status: 'finished',
      queued: 2,
      pending: 0,
      sent: 2,
      delivered: 2,
      failed: 0,
      finishedAt: expect.any(String),
    });
    const attempts = await deliveriesOf(s.merchantTarget);
    expect(failed.map((id) => [attempts.get(id)?.status, attempts.get(id)?.attemptsMade])).toEqual([
      ['succeeded', 2],
      ['succeeded', 2],
    ]);
  });

  it('creates and sends the callbacks of events produced while the target was switched off, and never sends one twice', async () => {
    const s = await scene();
    const before = await ingestPayment(s, 5 * MINUTE);
    await worker.runAll(() => ({ outcome: 'succeeded' }));
    await api.admin('patch', `/merchants/${s.merchantId}/notification-target`).send({ enabled: false }).expect(200);
    const whileOff = [await ingestPayment(s, 4 * MINUTE), await ingestPayment(s, 3 * MINUTE)];
    // Not the merchant target's: a subscription event goes to the program's target only (the routing rule).
    await ingestPayment(s, 3 * MINUTE, api, { objectType: 'subscription' });
    expect((await deliveriesOf(s.merchantTarget)).size).toBe(1);

    const refused = await recover(s.merchantKey.key, { from: ago(10 * MINUTE) }).expect(409);
    expectDocumented(document, 'merchant', '/deliveries/recover', 'post', refused);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({
      type: '/problems/target_switched_off',
      status: 409,
      disabledReason: 'switched-off',
      detail: expect.stringMatching(/support to switch the target on/),
    });

    await api.admin('patch', `/merchants/${s.merchantId}/notification-target`).send({ enabled: true }).expect(200);
    const res = await recover(s.merchantKey.key, { from: ago(10 * MINUTE), to: ago(0) }).expect(202);
    expect(res.body).toMatchObject({ queued: 2, neverSent: 2, pending: 2 });

    const created = await deliveriesOf(s.merchantTarget);
    expect(whileOff.map((id) => created.get(id)?.status)).toEqual(['pending', 'pending']);
    // Each new delivery sits in its event's week, as the ingest would have put it.
    for (const id of whileOff) {
      const event = await api.prisma.event.findFirstOrThrow({ where: { id } });
      expect(created.get(id)!.createdAt).toEqual(event.ingestedAt);
    }
    const worked = await worker.runAll(() => ({ outcome: 'succeeded' }));
    expect(worked.sort()).toEqual(whileOff.map((id) => created.get(id)!.id).sort());
    expect((await progress(s.merchantKey.key, res.body.id).expect(200)).body).toMatchObject({ status: 'finished', delivered: 2, neverSent: 2 });

    // Everything has been delivered: a second recovery of the same window queues nothing.
    const again = await recover(s.merchantKey.key, { from: ago(10 * MINUTE) }).expect(202);
    expect(again.body).toMatchObject({ queued: 0, neverSent: 0, status: 'finished' });
    expect(await worker.runAll(() => ({ outcome: 'succeeded' }))).toEqual([]);
    expect([...(await deliveriesOf(s.merchantTarget)).keys()].sort()).toEqual([before, ...whileOff].sort());
  });

  it('sends nothing the target never missed: events stored before it was set up', async () => {
    const tenant = await api.createTenant();
    await ingestPayment(tenant);
    const target = await api
      .admin('put', `/merchants/${tenant.merchantId}/notification-target`)
      .send({ url: 'https://merchant.example/hooks', auth: { mode: 'none' } })
      .expect(200);
    const after = await ingestPayment(tenant);
    await worker.runAll(() => ({ outcome: 'failed' }));

    const res = await recover(tenant.merchantKey.key, { from: ago(10 * MINUTE) }).expect(202);
    expect(res.body).toMatchObject({ queued: 1, neverSent: 0 });
    expect([...(await deliveriesOf(target.body.id)).keys()]).toEqual([after]);
  });

  it('runs one recovery of a target at a time when two are asked at once', async () => {
    const s = await scene();
    await ingestPayment(s);
    await worker.runAll(() => ({ outcome: 'failed' }));
    // Two keys of the merchant, so that the two requests do not wait for one key's turn but meet at the target's lock.
    const second = (await api.admin('post', '/api-keys').send({ merchantId: s.merchantId }).expect(201)).body as { key: string };
    const answers = await Promise.all([recover(s.merchantKey.key, { from: ago(10 * MINUTE) }), recover(second.key, { from: ago(10 * MINUTE) })]);
    expect(answers.map((res) => res.status).sort()).toEqual([202, 409]);
    expect(await api.prisma.recovery.count({ where: { targetId: s.merchantTarget } })).toBe(1);
  });

  it('takes only the events of the window, on their createdAt', async () => {
    const s = await scene();
    const early = await ingestPayment(s, 3 * DAY);
    const inside = await ingestPayment(s, 2 * DAY);
    const late = await ingestPayment(s, DAY);
    await worker.runAll(() => ({ outcome: 'failed' }));

    const res = await recover(s.merchantKey.key, { from: ago(2 * DAY + MINUTE), to: ago(DAY + MINUTE) }).expect(202);
    expect(res.body).toMatchObject({ queued: 1 });
    const statuses = await deliveriesOf(s.merchantTarget);
    expect([early, inside, late].map((id) => statuses.get(id)?.status)).toEqual(['failed', 'pending', 'failed']);
  });

  it('refuses a second recovery of the target with 409 naming the running one, until every callback it queued is final', async () => {
    const s = await scene();
    await ingestPayment(s);
    await worker.runAll(() => ({ outcome: 'failed' }));
    const first = await recover(s.merchantKey.key, { from: ago(10 * MINUTE) }).expect(202);

    const busy = await recover(s.merchantKey.key, { from: ago(10 * MINUTE) }).expect(409);
    expectDocumented(document, 'merchant', '/deliveries/recover', 'post', busy);
    expect(busy.body).toMatchObject({
      type: '/problems/recovery_running',
      recoveryId: first.body.id,
      detail: expect.stringContaining(`/deliveries/recoveries/${first.body.id}`),
    });
    // A program key recovers its program's own target: not blocked by the merchant target's recovery.
    await recover(s.programKey.key, { from: ago(10 * MINUTE) }).expect(404);

    // It fails again for good: the recovery is over, and the next one may send it once more.
    await worker.runAll(() => ({ outcome: 'failed' }));
    expect((await progress(s.merchantKey.key, first.body.id).expect(200)).body).toMatchObject({ status: 'finished', sent: 1, delivered: 0, failed: 1 });
    const second = await recover(s.merchantKey.key, { from: ago(10 * MINUTE) }).expect(202);
    expect(second.body).toMatchObject({ queued: 1, status: 'running' });
    // The first keeps the counts it finished with, though its delivery is pending again.
    expect((await progress(s.merchantKey.key, first.body.id).expect(200)).body).toMatchObject({ status: 'finished', sent: 1, failed: 1, pending: 0 });
  });

  it('queues at most RECOVERY_MAX_DELIVERIES and says where it stopped; the next recovery from there takes the rest', async () => {
    const s = await scene(bounded);
    const events = [await ingestPayment(s, 4 * MINUTE, bounded), await ingestPayment(s, 3 * MINUTE, bounded), await ingestPayment(s, 2 * MINUTE, bounded)];
    await boundedWorker.runAll(() => ({ outcome: 'failed' }));

    const first = await recover(s.merchantKey.key, { from: ago(10 * MINUTE) }, bounded).expect(202);
    const third = await bounded.prisma.event.findFirstOrThrow({ where: { id: events[2]! } });
    expect(first.body).toMatchObject({ queued: 2, complete: false, coveredTo: third.createdAt.toISOString() });
    await boundedWorker.runAll(() => ({ outcome: 'succeeded' }));

    const rest = await recover(s.merchantKey.key, { from: first.body.coveredTo }, bounded).expect(202);
    expect(rest.body).toMatchObject({ queued: 1, complete: true });
    await boundedWorker.runAll(() => ({ outcome: 'succeeded' }));
    const statuses = await deliveriesOf(s.merchantTarget, bounded);
    expect(events.map((id) => statuses.get(id)?.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
  });

  it('stops after reading 10 times RECOVERY_MAX_DELIVERIES events its filters refuse, and says where', async () => {
    const tenant = await bounded.createTenant();
    const target = await bounded
      .admin('put', `/merchants/${tenant.merchantId}/notification-target`)
      .send({ url: 'https://merchant.example/hooks', auth: { mode: 'none' }, notifications: { objectTypes: ['refund'] } })
      .expect(200);
    // 501 payments the target does not take, then a refund it does, one millisecond apart.
    const base = Date.now() - 5 * MINUTE;
    const events = Array.from({ length: 502 }, (_, i) =>
      ingestEvent(tenant, { objectType: i === 501 ? 'refund' : 'payment', createdAt: new Date(base + i).toISOString() }),
    );
    await bounded.ingest({ events }).expect(201);
    expect((await deliveriesOf(target.body.id, bounded)).size).toBe(1);

    const res = await recover(tenant.merchantKey.key, { from: ago(10 * MINUTE) }, bounded).expect(202);
    // One page of 500 candidates read, none taken: the next recovery goes on from the last one read.
    expect(res.body).toMatchObject({ queued: 0, complete: false, coveredTo: new Date(base + 499).toISOString() });
  });

  it.each([
    ['from that is not a date-time', { from: 'yesterday' }, '/from'],
    ['no from', { to: ago(0) }, '/from'],
    ['from more than RECOVERY_MAX_DAYS ago', { from: ago(7 * DAY + MINUTE) }, '/from'],
    ['from in the future without to', { from: new Date(Date.now() + DAY).toISOString() }, '/from'],
    ['to before from', { from: ago(MINUTE), to: ago(2 * MINUTE) }, '/to'],
    ['to that is not a date-time', { from: ago(MINUTE), to: 'now' }, '/to'],
    ['an unknown field', { from: ago(MINUTE), status: 'failed' }, '/status'],
  ])('refuses %s with a 400 problem naming the field', async (_case, body, pointer) => {
    const s = await scene();
    const res = await recover(s.merchantKey.key, body).expect(400);
    expectDocumented(document, 'merchant', '/deliveries/recover', 'post', res);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.errors).toEqual([expect.objectContaining({ pointer, message: expect.any(String) })]);
    if (pointer === '/from' && 'from' in body && body.from !== 'yesterday') expect(res.body.errors[0].message).toMatch(/RECOVERY_MAX_DAYS|to defaults to now/);
  });

  it('refuses a body that is not JSON with 400, and a caller without a target with 404', async () => {
    const s = await scene();
    const malformed = await request(api.app)
      .post('/deliveries/recover')
      .set('x-api-key', s.merchantKey.key)
      .set('Content-Type', 'application/json')
      .set('Accept-Language', 'en-US')
      .set('Origin', 'https://shop.example')
      .set('User-Agent', 'herald-tests/1.0')
      .send('{"from":')
      .expect(400);
    expect(malformed.body).toMatchObject({ type: '/problems/malformed_json' });
    const none = await recover(s.programKey.key, { from: ago(MINUTE) }).expect(404);
    expectDocumented(document, 'merchant', '/deliveries/recover', 'post', none);
    expect(none.body.detail).toMatch(/No notification target/);
  });
});

describe('tenant isolation of recoveries', () => {
  it("answers another tenant's recovery id with 404, as an id that does not exist", async () => {
    const mine = await scene();
    const theirs = await scene();
    await ingestPayment(mine);
    await worker.runAll(() => ({ outcome: 'failed' }));
    const started = await recover(mine.merchantKey.key, { from: ago(10 * MINUTE) }).expect(202);

    await progress(mine.merchantKey.key, started.body.id).expect(200);
    const other = await progress(theirs.merchantKey.key, started.body.id).expect(404);
    expectDocumented(document, 'merchant', '/deliveries/recoveries/{id}', 'get', other);
    const unknown = await progress(theirs.merchantKey.key, randomUUID()).expect(404);
    expect(other.body).toEqual({ ...unknown.body, detail: `No recovery "${started.body.id}".` });
    // The merchant's own program key sees its program's target's recoveries, not its merchants'.
    await progress(mine.programKey.key, started.body.id).expect(404);
    await progress(mine.merchantKey.key, 'not-a-uuid').expect(404);
  });

  it("recovers with a program key its program's own target only, never another program's", async () => {
    const s = await scene();
    const other = await scene();
    const programTarget = await api
      .admin('put', `/programs/${s.programId}/notification-target`)
      .send({ url: 'https://program.example/hooks', auth: { mode: 'none' } })
      .expect(200);
    const event = await ingestPayment(s);
    const otherEvent = await ingestPayment(other);
    await worker.runAll(() => ({ outcome: 'failed' }));

    const res = await recover(s.programKey.key, { from: ago(10 * MINUTE) }).expect(202);
    expect(res.body).toMatchObject({ queued: 1 });
    expect((await deliveriesOf(programTarget.body.id)).get(event)?.status).toBe('pending');
    // The merchant's own target and the other program's are left as they were.
    expect((await deliveriesOf(s.merchantTarget)).get(event)?.status).toBe('failed');
    expect((await deliveriesOf(other.merchantTarget)).get(otherEvent)?.status).toBe('failed');
    await progress(other.programKey.key, res.body.id).expect(404);
  });

  it('refuses a revoked or missing key with 401 before reading the body', async () => {
    const s = await scene();
    const missing = await recover(undefined, { from: 'not even a date' }).expect(401);
    expectDocumented(document, 'merchant', '/deliveries/recover', 'post', missing);
    expect(missing.body).toMatchObject({ type: '/problems/unauthorized', header: 'x-api-key' });
    await api.admin('delete', `/api-keys/${s.merchantKey.id}`).expect(200);
    await recover(s.merchantKey.key, { from: ago(MINUTE) }).expect(401);
    const res = await progress(s.merchantKey.key, randomUUID()).expect(401);
    expectDocumented(document, 'merchant', '/deliveries/recoveries/{id}', 'get', res);
  });

  it('needs the headers every merchant request carries', async () => {
    const s = await scene();
    const res = await request(api.app)
      .post('/deliveries/recover')
      .set('x-api-key', s.merchantKey.key)
      .set('Content-Type', 'application/json')
      .set('Origin', 'https://shop.example')
      .set('User-Agent', 'herald-tests/1.0')
      .send(JSON.stringify({ from: ago(MINUTE) }))
      .expect(400);
    expect(res.body).toMatchObject({ type: '/problems/invalid_header', errors: [{ header: 'Accept-Language' }] });
  });

  it('never answers or logs a credential of the target', async () => {
    const s = await scene();
    await ingestPayment(s);
    await worker.runAll(() => ({ outcome: 'failed' }));
    const started = await recover(s.merchantKey.key, { from: ago(10 * MINUTE) }).expect(202);
    await worker.runAll(() => ({ outcome: 'succeeded' }));
    const followed = await progress(s.merchantKey.key, started.body.id).expect(200);
    const busy = await recover(s.merchantKey.key, { from: ago(10 * MINUTE) }).expect(202);
    const basic = Buffer.from(`shop:${s.password}`).toString('base64');
    for (const text of [JSON.stringify([started.body, followed.body, busy.body]), api.logs()]) {
      expect(text).not.toContain(s.password);
      expect(text).not.toContain(basic);
    }
    // The jobs carry ids only.
    const jobs = await api.deliveryQueue.getJobs(['waiting', 'prioritized', 'completed', 'failed', 'delayed']);
    expect(JSON.stringify(jobs.map((job) => job.data))).not.toContain(s.password);
  });
});

describe('a recovery and the queue', () => {
  it('answers 503 and changes nothing while Redis is unreachable', async () => {
    const s = await scene();
    const event = await ingestPayment(s);
    await worker.runAll(() => ({ outcome: 'failed' }));
    const down = createTestApi({ REDIS_URL: `redis://127.0.0.1:${await closedPort()}` });
    try {
      const res = await recover(s.merchantKey.key, { from: ago(10 * MINUTE) }, down).expect(503);
      expectDocumented(document, 'merchant', '/deliveries/recover', 'post', res);
      expect(res.body.type).toBe('/problems/queue_unavailable');
    } finally {
      await down.close();
    }
    expect((await deliveriesOf(s.merchantTarget)).get(event)?.status).toBe('failed');
    expect(await api.prisma.recovery.count({ where: { targetId: s.merchantTarget } })).toBe(0);
  });

  it('leaves the deliveries pending and unmarked for the outbox sweeper when Redis refuses their jobs after the commit', async () => {
    const s = await scene();
    const failed = await ingestPayment(s, 2 * MINUTE);
    await worker.runAll(() => ({ outcome: 'failed' }));
    await api.admin('patch', `/merchants/${s.merchantId}/notification-target`).send({ enabled: false }).expect(200);
    const neverSent = await ingestPayment(s, MINUTE);
    await api.admin('patch', `/merchants/${s.merchantId}/notification-target`).send({ enabled: true }).expect(200);

    const redis = createRedisConnection(api.config.redisUrl, { role: 'client' });
    await pingRedis(redis);
    const producer = createDeliveryProducer(redis, { prefix: api.config.queuePrefix, retry: api.config.retry, timeoutMs: 2_000 });
    const logger = createLogger({ level: 'error', service: 'test', stream: new PassThrough() });
    const recovery = createRecovery({
      recoveries: recoveryRepository(api.databases.merchantReads),
      publisher: createOutboxPublisher({
        producer: { enqueue: () => Promise.reject(new Error('Redis went away')) },
        deliveries: deliveryRepository(api.databases.ingest),
        logger,
      }),
      producer,
      logger,
    });
    try {
      const result = await recovery({
        ownerKey: targetOwnerKey({ kind: 'merchant', merchantId: s.merchantId }),
        owner: 'merchant',
        window: { from: new Date(Date.now() - 10 * MINUTE), to: new Date(), storedSince: new Date(Date.now() - DAY) },
        maxDeliveries: 100,
      });
      expect(result).toMatchObject({ queued: 2, created: 1, complete: true });
      const rows = await deliveriesOf(s.merchantTarget);
      for (const id of [failed, neverSent]) expect(rows.get(id)).toMatchObject({ status: 'pending', enqueuedAt: null });
      // The failed delivery's finished job is gone, so the sweeper's plain enqueue makes a new one.
      expect(await api.deliveryQueue.getJobState(rows.get(failed)!.id)).toBe('unknown');
    } finally {
      await producer.close();
      redis.disconnect();
    }
  });
});
