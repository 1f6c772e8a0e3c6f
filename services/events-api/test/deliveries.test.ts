import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import request from 'supertest';
import { credentialsCipherFromConfig, deliveryAttemptRepository, deliveryHistoryRepository, deliveryRepository } from '@herald/db';
import { createLogger } from '@herald/logging';
import { createOutboxPublisher, createReplay } from '@herald/outbox';
import { createDeliveryProducer, createRedisConnection, pingRedis } from '@herald/queue';
import { closedPort } from '@herald/testing';
import { createTestApi } from './support/api';
import { ingestEvent } from './support/events';
import { createFakeWorker } from './support/fake-worker';

const api = createTestApi();
const worker = createFakeWorker(api);
afterAll(async () => {
  await worker.close();
  await api.close();
});

// Each test works its own deliveries: jobs another test left waiting are dropped first.
beforeEach(() => api.deliveryQueue.drain(true));

interface Scene {
  programId: string;
  merchantId: string;
  programTarget: string;
  merchantTarget: string;
  password: string;
}

/** A fresh tenant with a program target (basic auth, a known password) and a merchant target. */
async function scene(): Promise<Scene> {
  const { programId, merchantId } = await api.createTenant();
  const password = `pw-${randomUUID()}`;
  const programTarget = await api
    .admin('put', `/programs/${programId}/notification-target`)
    .send({ url: 'https://program.example/hooks', auth: { mode: 'basic', username: 'program-user', password } })
    .expect(200);
  const merchantTarget = await api
    .admin('put', `/merchants/${merchantId}/notification-target`)
    .send({ url: 'https://merchant.example/hooks', auth: { mode: 'none' } })
    .expect(200);
  return { programId, merchantId, programTarget: programTarget.body.id, merchantTarget: merchantTarget.body.id, password };
}

/** Ingests one payment event of the scene's merchant: one delivery per target. Returns the event id. */
async function ingestPayment(s: Scene, fields: Record<string, unknown> = {}): Promise<string> {
  const event = ingestEvent(s, { objectType: 'payment', ...fields });
  await api.ingest(event).expect(201);
  return event.id;
}

async function deliveriesOf(eventId: string) {
  return api.prisma.delivery.findMany({ where: { eventId }, orderBy: { createdAt: 'asc' } });
}

async function deliveryTo(eventId: string, targetId: string) {
  const delivery = (await deliveriesOf(eventId)).find((d) => d.targetId === targetId);
  if (!delivery) throw new Error(`no delivery of ${eventId} to ${targetId}`);
  return delivery;
}

/** A fresh scene with one payment event, whose deliveries the worker has ended with `outcome`; and its delivery to `to`. */
async function workedDelivery(outcome: 'succeeded' | 'failed', to: 'programTarget' | 'merchantTarget') {
  const s = await scene();
  const eventId = await ingestPayment(s);
  await worker.runAll(() => ({ outcome }));
  return { s, eventId, delivery: await deliveryTo(eventId, s[to]) };
}

describe('GET /admin/deliveries', () => {
  it('lists deliveries newest first in the page envelope, filtered by merchant', async () => {
    const s = await scene();
    const first = await ingestPayment(s);
    const second = await ingestPayment(s);

    const res = await api.admin('get', `/deliveries?merchantId=${s.merchantId}`).expect(200);
    expect(res.body).toMatchObject({ page: 1, pageSize: 20, count: 4, totalPages: 1 });
    expect(res.body.data.map((d: { eventId: string }) => d.eventId)).toEqual([second, second, first, first]);
    expect(res.body.data[0]).toEqual({
      id: expect.any(String),
      eventId: second,
      targetId: expect.any(String),
      programId: s.programId,
      merchantId: s.merchantId,
      status: 'pending',
      attemptsMade: 0,
      lastStatusCode: null,
      lastError: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      enqueuedAt: expect.any(String),
      completedAt: null,
      waitingFor: null,
      deferrals: { count: 0, lastAt: null, lastReason: null },
    });
  });

  it('filters by program, event, target and status, and pages', async () => {
    const s = await scene();
    const programWide = ingestEvent({ programId: s.programId }, { objectType: 'subscription' });
    await api.ingest(programWide).expect(201);
    const first = await ingestPayment(s);
    const second = await ingestPayment(s);
    await worker.runAll((job) => ({ outcome: job.eventId === first ? 'failed' : 'succeeded' }));

    const all = await api.admin('get', `/deliveries?programId=${s.programId}`).expect(200);
    expect(all.body.count).toBe(5);
    const ofEvent = await api.admin('get', `/deliveries?eventId=${first}`).expect(200);
    expect(ofEvent.body.data.map((d: { targetId: string }) => d.targetId).sort()).toEqual([s.programTarget, s.merchantTarget].sort());
    const toMerchant = await api.admin('get', `/deliveries?targetId=${s.merchantTarget}`).expect(200);
    expect(toMerchant.body.data.map((d: { eventId: string }) => d.eventId)).toEqual([second, first]);
    const failed = await api.admin('get', `/deliveries?programId=${s.programId}&status=failed`).expect(200);
    expect(failed.body.data.map((d: { eventId: string; status: string }) => [d.eventId, d.status])).toEqual([
      [first, 'failed'],
      [first, 'failed'],
    ]);
    expect(failed.body.data[0]).toMatchObject({
      attemptsMade: 1,
      lastStatusCode: 500,
      lastError: 'the target answered HTTP 500',
      completedAt: expect.any(String),
    });

    const page2 = await api.admin('get', `/deliveries?programId=${s.programId}&pageSize=2&page=2`).expect(200);
    expect(page2.body).toMatchObject({ page: 2, pageSize: 2, count: 5, totalPages: 3 });
    expect(page2.body.data.map((d: { id: string }) => d.id)).toEqual(all.body.data.slice(2, 4).map((d: { id: string }) => d.id));
  });

  it('filters by creation time: at or after createdFrom, before createdTo', async () => {
    const s = await scene();
    await ingestPayment(s);
    const [delivery] = await deliveriesOf(await ingestPayment(s));
    const at = delivery!.createdAt.toISOString();
    const from = await api.admin('get', `/deliveries?merchantId=${s.merchantId}&createdFrom=${at}`).expect(200);
    expect(from.body.data.map((d: { id: string }) => d.id)).toContain(delivery!.id);
    const to = await api.admin('get', `/deliveries?merchantId=${s.merchantId}&createdTo=${at}`).expect(200);
    expect(to.body.data.map((d: { id: string }) => d.id)).not.toContain(delivery!.id);
  });

  it('answers an empty page past the end', async () => {
    const s = await scene();
    await ingestPayment(s);
    const res = await api.admin('get', `/deliveries?merchantId=${s.merchantId}&page=9`).expect(200);
    expect(res.body).toMatchObject({ page: 9, count: 2, totalPages: 1, data: [] });
  });

  it.each([
    ['status=delivered', 'status'],
    ['targetId=not-a-uuid', 'targetId'],
    ['merchantId=has%20space', 'merchantId'],
    ['eventId=evt-1', 'eventId'],
    ['createdFrom=yesterday', 'createdFrom'],
    ['pageSize=101', 'pageSize'],
    ['page=0', 'page'],
    ['colour=red', 'colour'],
  ])('refuses %s with a 400 naming the parameter', async (query, parameter) => {
    const res = await api.admin('get', `/deliveries?${query}`).expect(400);
    expect(res.type).toBe('application/problem+json');
    expect(res.body.errors.map((e: { parameter: string }) => e.parameter)).toEqual([parameter]);
  });

  it('suggests the known name for a misspelt parameter', async () => {
    const res = await api.admin('get', '/deliveries?page_size=5').expect(400);
    expect(res.body.errors).toEqual([{ parameter: 'page_size', message: 'is not an allowed property (did you mean pageSize?)' }]);
  });

  it('requires the admin token', async () => {
    await request(api.app).get('/admin/deliveries').expect(401);
    await request(api.app).get('/admin/deliveries').set('Authorization', 'Bearer wrong').expect(401);
  });
});

describe('GET /admin/deliveries/:id', () => {
  it('shows the delivery with its target and every attempt, oldest first, each with the URL it went to', async () => {
    const s = await scene();
    const eventId = await ingestPayment(s);
    const delivery = await deliveryTo(eventId, s.programTarget);
    const attempts = deliveryAttemptRepository(api.databases.ingest, credentialsCipherFromConfig(api.config));
    const startedAt = new Date('2026-03-01T10:00:00.000Z');
    await attempts.recordAttempts([
      {
        deliveryId: delivery.id,
        attempt: { startedAt, durationMs: 10_000, errorKind: 'timeout', errorMessage: 'no answer within 10000 ms', url: 'https://old.example/hooks?token=***' },
        outcome: 'pending',
      },
    ]);
    await attempts.recordAttempts([
      {
        deliveryId: delivery.id,
        // Written unmasked (as no worker does): the history masks it all the same.
        attempt: {
          startedAt: new Date(startedAt.getTime() + 30_000),
          durationMs: 42,
          statusCode: 200,
          responseBody: '{"received":true}',
          url: 'https://program.example/hooks?key=s3cret',
        },
        outcome: 'succeeded',
      },
    ]);

    const res = await api.admin('get', `/deliveries/${delivery.id}`).expect(200);
    expect(res.body).toMatchObject({
      id: delivery.id,
      eventId,
      targetId: s.programTarget,
      programId: s.programId,
      merchantId: s.merchantId,
      status: 'succeeded',
      attemptsMade: 2,
      lastStatusCode: 200,
      target: { id: s.programTarget, owner: 'program', url: 'https://program.example/hooks', enabled: true },
    });
    expect(res.body.attempts).toEqual([
      {
        number: 1,
        startedAt: '2026-03-01T10:00:00.000Z',
        durationMs: 10_000,
        statusCode: null,
        errorKind: 'timeout',
        errorMessage: 'no answer within 10000 ms',
        responseBody: null,
        url: 'https://old.example/hooks?token=***',
      },
      {
        number: 2,
        startedAt: '2026-03-01T10:00:30.000Z',
        durationMs: 42,
        statusCode: 200,
        errorKind: null,
        errorMessage: null,
        responseBody: '{"received":true}',
        url: 'https://program.example/hooks?key=***',
      },
    ]);
    expect(res.text).not.toContain('s3cret');
  });

  it("shows the breaker's and the limit's deferrals apart from the attempts, which they are not", async () => {
    const s = await scene();
    const delivery = await deliveryTo(await ingestPayment(s), s.programTarget);
    const attempts = deliveryAttemptRepository(api.databases.ingest, credentialsCipherFromConfig(api.config));
    await attempts.recordAttempts([
      {
        deliveryId: delivery.id,
        attempt: { startedAt: new Date('2026-03-01T10:00:00.000Z'), durationMs: 10_000, errorKind: 'timeout', errorMessage: 'no answer within 10000 ms' },
        outcome: 'pending',
      },
    ]);
    await attempts.recordDeferrals([
      { deliveryId: delivery.id, reason: 'target_busy', at: new Date('2026-03-01T09:59:00.000Z') },
      { deliveryId: delivery.id, reason: 'breaker_open', at: new Date('2026-03-01T10:00:40.000Z') },
      { deliveryId: delivery.id, reason: 'breaker_open', at: new Date('2026-03-01T10:01:30.000Z') },
    ]);

    const res = await api.admin('get', `/deliveries/${delivery.id}`).expect(200);
    expect(res.body).toMatchObject({ attemptsMade: 1, deferrals: { count: 3, lastAt: '2026-03-01T10:01:30.000Z', lastReason: 'breaker_open' } });
    expect(res.body.attempts).toHaveLength(1);
    expect(res.body).not.toHaveProperty('lastDeferredAt');
    const listed = await api.admin('get', `/deliveries?targetId=${s.programTarget}`).expect(200);
    expect(listed.body.data[0].deferrals).toEqual({ count: 3, lastAt: '2026-03-01T10:01:30.000Z', lastReason: 'breaker_open' });
  });

  it('redacts an Authorization value a merchant echoed back in its answer', async () => {
    const s = await scene();
    const delivery = await deliveryTo(await ingestPayment(s), s.programTarget);
    const basic = Buffer.from(`program-user:${s.password}`).toString('base64');
    await deliveryAttemptRepository(api.databases.ingest, credentialsCipherFromConfig(api.config)).recordAttempts([
      {
        deliveryId: delivery.id,
        attempt: {
          startedAt: new Date(),
          durationMs: 5,
          statusCode: 400,
          errorKind: 'http_status',
          errorMessage: 'HTTP 400',
          responseBody: `{"headers":{"authorization":"Basic ${basic}"}}`,
        },
        outcome: 'pending',
      },
    ]);
    const res = await api.admin('get', `/deliveries/${delivery.id}`).expect(200);
    expect(res.body.attempts[0].responseBody).toBe('{"headers":{"authorization":"Basic [REDACTED]"}}');
    expect(JSON.stringify(res.body)).not.toContain(basic);
  });

  it.each([randomUUID(), 'not-a-uuid'])('answers 404 for %s, which is no delivery', async (id) => {
    const res = await api.admin('get', `/deliveries/${id}`).expect(404);
    expect(res.body).toMatchObject({ status: 404, detail: `No delivery "${id}".` });
  });
});

describe('GET /admin/events/:eventId/deliveries', () => {
  it("lists the event's deliveries with their attempts", async () => {
    const s = await scene();
    const eventId = await ingestPayment(s);
    await worker.runAll(() => ({ outcome: 'succeeded' }));
    const res = await api.admin('get', `/events/${eventId}/deliveries`).expect(200);
    expect(res.body.eventId).toBe(eventId);
    expect(res.body.data).toHaveLength(2);
    for (const delivery of res.body.data) {
      expect(delivery).toMatchObject({ eventId, status: 'succeeded', attempts: [{ number: 1, statusCode: 200 }] });
    }
    expect(res.body.data.map((d: { target: { owner: string } }) => d.target.owner).sort()).toEqual(['merchant', 'program']);
  });

  it('answers an empty list for an event no target wanted', async () => {
    const { programId } = await api.createTenant();
    const event = ingestEvent({ programId }, { objectType: 'subscription' });
    await api.ingest(event).expect(201);
    const res = await api.admin('get', `/events/${event.id}/deliveries`).expect(200);
    expect(res.body).toEqual({ eventId: event.id, data: [] });
  });

  it('answers 404 for an unknown event', async () => {
    const eventId = `Event-${randomUUID()}`;
    const res = await api.admin('get', `/events/${eventId}/deliveries`).expect(404);
    expect(res.body.detail).toBe(`No event "${eventId}".`);
  });
});

describe('POST /admin/deliveries/:id/replay', () => {
  it('sets a delivered delivery back to pending and queues a new job, whose attempts continue the count', async () => {
    const { s, eventId, delivery } = await workedDelivery('succeeded', 'merchantTarget');
    const finishedJob = (await api.deliveryQueue.getJob(delivery.id))!;
    expect(await finishedJob.getState()).toBe('completed');

    const res = await api.admin('post', `/deliveries/${delivery.id}/replay`).expect(202);
    expect(res.body).toEqual({
      deliveries: [
        expect.objectContaining({
          id: delivery.id,
          eventId,
          targetId: s.merchantTarget,
          status: 'pending',
          previousStatus: 'succeeded',
          job: 'added',
          completedAt: null,
        }),
      ],
      more: false,
    });
    const stored = await api.prisma.delivery.findFirstOrThrow({ where: { id: delivery.id } });
    expect(stored).toMatchObject({ status: 'pending', completedAt: null, attemptsMade: 1 });
    expect(stored.enqueuedAt).not.toBeNull();
    const job = (await api.deliveryQueue.getJob(delivery.id))!;
    expect(await job.getState()).toBe('prioritized');
    expect(job.finishedOn).toBeUndefined();
    expect(job.data).toEqual(finishedJob.data);

    await worker.runAll(() => ({ outcome: 'succeeded' }));
    const detail = await api.admin('get', `/deliveries/${delivery.id}`).expect(200);
    expect(detail.body.attempts.map((a: { number: number }) => a.number)).toEqual([1, 2]);
    expect(detail.body.status).toBe('succeeded');
  });

  it('sets a failed delivery back to pending with a new job', async () => {
    const { delivery } = await workedDelivery('failed', 'programTarget');
    expect(await api.deliveryQueue.getJobState(delivery.id)).toBe('failed');

    const res = await api.admin('post', `/deliveries/${delivery.id}/replay`).expect(202);
    expect(res.body.deliveries[0]).toMatchObject({ status: 'pending', previousStatus: 'failed', job: 'added' });
    expect(await api.deliveryQueue.getJobState(delivery.id)).toBe('prioritized');
  });

  it('keeps the job of a delivery that is still queued, adding no second one', async () => {
    const s = await scene();
    const delivery = await deliveryTo(await ingestPayment(s), s.programTarget);
    const res = await api.admin('post', `/deliveries/${delivery.id}/replay`).expect(202);
    expect(res.body.deliveries[0]).toMatchObject({ status: 'pending', previousStatus: 'pending', job: 'already-queued' });
    expect(await api.deliveryQueue.getJobCounts('prioritized')).toEqual({ prioritized: 2 });
  });

  it.each([randomUUID(), 'not-a-uuid'])('answers 404 for %s, which is no delivery', async (id) => {
    await api.admin('post', `/deliveries/${id}/replay`).expect(404);
  });

  it('answers 503 and changes nothing while Redis is unreachable', async () => {
    const { delivery } = await workedDelivery('failed', 'programTarget');

    const down = createTestApi({ REDIS_URL: `redis://127.0.0.1:${await closedPort()}` });
    try {
      const res = await down.admin('post', `/deliveries/${delivery.id}/replay`).expect(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.body.type).toBe('/problems/queue_unavailable');
    } finally {
      await down.close();
    }
    expect(await api.prisma.delivery.findFirstOrThrow({ where: { id: delivery.id } })).toMatchObject({ status: 'failed' });
    expect(await api.deliveryQueue.getJobState(delivery.id)).toBe('failed');
  });
});

describe('replay when Redis refuses the new job after the reset', () => {
  it('leaves the delivery pending and unmarked, for the outbox sweeper', async () => {
    const { delivery } = await workedDelivery('failed', 'programTarget');
    const redis = createRedisConnection(api.config.redisUrl, { role: 'client' });
    await pingRedis(redis);
    const producer = createDeliveryProducer(redis, { prefix: api.config.queuePrefix, retry: api.config.retry, timeoutMs: 2_000 });
    const logger = createLogger({ level: 'error', service: 'test', stream: new PassThrough() });
    const replay = createReplay({
      history: deliveryHistoryRepository(api.databases.ingest),
      publisher: createOutboxPublisher({
        producer: { enqueue: () => Promise.reject(new Error('Redis went away')) },
        deliveries: deliveryRepository(api.databases.ingest),
        logger,
      }),
      producer,
      logger,
    });
    try {
      const answer = await replay({ deliveryId: delivery.id });
      expect(answer.deliveries).toEqual([expect.objectContaining({ id: delivery.id, status: 'pending', job: 'left-to-sweeper', enqueuedAt: null })]);
      expect(await api.prisma.delivery.findFirstOrThrow({ where: { id: delivery.id } })).toMatchObject({ status: 'pending', enqueuedAt: null });
      // The finished job is gone, so the sweeper's plain enqueue makes a new one.
      expect(await api.deliveryQueue.getJobState(delivery.id)).toBe('unknown');
    } finally {
      await producer.close();
      redis.disconnect();
    }
  });
});

describe('POST /admin/deliveries/replay', () => {
  it('replays the oldest matching deliveries up to the limit, and says more match', async () => {
    const s = await scene();
    const events = [await ingestPayment(s), await ingestPayment(s), await ingestPayment(s)];
    await worker.runAll(() => ({ outcome: 'failed' }));

    const res = await api.admin('post', '/deliveries/replay').send({ status: 'failed', targetId: s.merchantTarget, limit: 2 }).expect(202);
    expect(res.body.more).toBe(true);
    expect(res.body.deliveries.map((d: { eventId: string }) => d.eventId)).toEqual(events.slice(0, 2));
    for (const delivery of res.body.deliveries) expect(delivery).toMatchObject({ status: 'pending', previousStatus: 'failed', job: 'added' });

    const stillFailed = await api.admin('get', `/deliveries?merchantId=${s.merchantId}&status=failed`).expect(200);
    expect(stillFailed.body.data.map((d: { eventId: string; targetId: string }) => `${d.eventId} ${d.targetId}`).sort()).toEqual(
      [`${events[0]} ${s.programTarget}`, `${events[1]} ${s.programTarget}`, `${events[2]} ${s.programTarget}`, `${events[2]} ${s.merchantTarget}`].sort(),
    );

    const rest = await api.admin('post', '/deliveries/replay').send({ status: 'failed', targetId: s.merchantTarget }).expect(202);
    expect(rest.body).toMatchObject({ more: false, deliveries: [{ eventId: events[2] }] });
    expect(await api.deliveryQueue.getJobCounts('prioritized')).toEqual({ prioritized: 3 });
  });

  it('replays only the deliveries of the status asked for, within a time range', async () => {
    const s = await scene();
    const failed = await ingestPayment(s);
    const delivered = await ingestPayment(s);
    await worker.runAll((job) => ({ outcome: job.eventId === failed ? 'failed' : 'succeeded' }));
    const from = (await deliveriesOf(failed))[0]!.createdAt;

    const res = await api
      .admin('post', '/deliveries/replay')
      .send({ status: 'failed', merchantId: s.merchantId, createdFrom: from.toISOString(), createdTo: new Date(Date.now() + 60_000).toISOString() })
      .expect(202);
    expect(res.body.deliveries.map((d: { eventId: string }) => d.eventId)).toEqual([failed, failed]);
    expect((await deliveriesOf(delivered)).map((d) => d.status)).toEqual(['succeeded', 'succeeded']);
  });

  it('answers 202 with nothing replayed when nothing matches', async () => {
    const res = await api
      .admin('post', '/deliveries/replay')
      .send({ merchantId: `nobody-${randomUUID()}` })
      .expect(202);
    expect(res.body).toEqual({ deliveries: [], more: false });
  });

  it.each([
    [{}, ''],
    [{ status: 'failed' }, ''],
    [{ programId: 'p1', limit: 1001 }, '/limit'],
    [{ programId: 'p1', limit: 0 }, '/limit'],
    [{ programId: 'p1', limit: '10' }, '/limit'],
    [{ programId: 'p1', colour: 'red' }, '/colour'],
    [{ programId: 'p1', status: 'delivered' }, '/status'],
    [{ targetId: 'not-a-uuid' }, '/targetId'],
    [{ createdFrom: 'yesterday' }, '/createdFrom'],
  ])('refuses %j with a 400 naming the field %p', async (body, pointer) => {
    const res = await api.admin('post', '/deliveries/replay').send(body).expect(400);
    expect(res.body.errors.map((e: { pointer: string }) => e.pointer)).toEqual([pointer]);
  });

  it('explains that a replay must name what it takes', async () => {
    const res = await api.admin('post', '/deliveries/replay').send({ status: 'failed' }).expect(400);
    expect(res.body.errors[0].message).toMatch(/programId, merchantId, eventId or targetId, or both createdFrom and createdTo/);
  });

  describe('scoped by time only', () => {
    const day = 24 * 3600 * 1000;
    const at = (ms: number) => new Date(ms).toISOString();

    it.each([
      [{ createdFrom: '1970-01-01T00:00:00Z' }, '/createdTo', /createdTo is required/],
      [{ status: 'failed', createdTo: at(Date.now()) }, '/createdFrom', /createdFrom is required/],
      [{ createdFrom: at(Date.now() - 32 * day), createdTo: at(Date.now()) }, '/createdTo', /at most 31 days after createdFrom/],
      [{ createdFrom: '1970-01-01T00:00:00Z', createdTo: at(Date.now()) }, '/createdTo', /at most 31 days after createdFrom/],
    ])('refuses %j with a 400 naming %p', async (body, pointer, message) => {
      const res = await api.admin('post', '/deliveries/replay').send(body).expect(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.errors).toEqual([{ pointer, message: expect.stringMatching(message) }]);
    });

    it('takes a range of at most 31 days, or any range next to an id', async () => {
      const now = Date.now();
      await api
        .admin('post', '/deliveries/replay')
        .send({ status: 'failed', createdFrom: at(now - 31 * day), createdTo: at(now) })
        .expect(202);
      await api
        .admin('post', '/deliveries/replay')
        .send({ merchantId: `nobody-${randomUUID()}`, createdFrom: '1970-01-01T00:00:00Z' })
        .expect(202);
    });
  });

  describe('with REPLAY_MAX_DAYS=2', () => {
    const narrow = createTestApi({ REPLAY_MAX_DAYS: '2' });
    afterAll(() => narrow.close());

    it("refuses a three-day range naming the setting's bound", async () => {
      const now = Date.now();
      const res = await narrow
        .admin('post', '/deliveries/replay')
        .send({ createdFrom: new Date(now - 3 * 24 * 3600 * 1000).toISOString(), createdTo: new Date(now).toISOString() })
        .expect(400);
      expect(res.body.errors).toEqual([{ pointer: '/createdTo', message: expect.stringMatching(/at most 2 days after createdFrom/) }]);
    });
  });
});

describe('secrets in the delivery history', () => {
  it('never shows a target password in any answer, job or log line', async () => {
    const { s, eventId, delivery } = await workedDelivery('failed', 'programTarget');

    const answers = [
      await api.admin('get', `/deliveries?programId=${s.programId}`).expect(200),
      await api.admin('get', `/deliveries/${delivery.id}`).expect(200),
      await api.admin('get', `/events/${eventId}/deliveries`).expect(200),
      await api.admin('post', `/deliveries/${delivery.id}/replay`).expect(202),
      await api.admin('post', '/deliveries/replay').send({ programId: s.programId }).expect(202),
    ];
    const job = (await api.deliveryQueue.getJob(delivery.id))!;
    const seen = [...answers.map((res) => res.text), JSON.stringify(job.toJSON()), api.logs()].join('\n');
    expect(seen).toContain(delivery.id);
    expect(seen).not.toContain(s.password);
  });
});
