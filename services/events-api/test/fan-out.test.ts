import { loadApiConfig } from '@herald/config';
import { MAX_DELIVERY_ATTEMPTS } from '@herald/domain';
import { createLogger } from '@herald/logging';
import { createDeliveryProducer, createRedisConnection, DELIVERY_BACKOFF_TYPE } from '@herald/queue';
import { closedPort, testDatabaseUrl, uniqueId } from '@herald/testing';
import { PassThrough } from 'node:stream';
import request from 'supertest';
import { createApp } from '../src/app';
import { closeApiDatabases, createApiDatabases } from '../src/databases';
import { createTestApi } from './support/api';
import { ingestEvent } from './support/events';

const api = createTestApi();
afterAll(() => api.close());

type Tenant = Awaited<ReturnType<typeof api.createTenant>>;

async function setTarget(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await api.admin('put', path).send({ url: 'https://merchant.example/hooks', auth: { mode: 'none' }, ...body });
  expect(res.status).toBe(200);
  return res.body.id as string;
}

async function deliveriesOf(eventId: string) {
  return api.prisma.delivery.findMany({ where: { eventId }, orderBy: { targetId: 'asc' } });
}

describe('fan-out of ingested events to notification targets', () => {
  let tenant: Tenant;
  let programTarget: string;
  let merchantTarget: string;

  beforeEach(async () => {
    tenant = await api.createTenant();
    programTarget = await setTarget(`/programs/${tenant.programId}/notification-target`, {});
    merchantTarget = await setTarget(`/merchants/${tenant.merchantId}/notification-target`, {});
  });

  it('gives both targets one delivery and one job each when both match', async () => {
    const event = ingestEvent(tenant, { objectType: 'payment' });
    await api.ingest(event).expect(201);
    const deliveries = await deliveriesOf(event.id);
    expect(deliveries.map((d) => d.targetId).sort()).toEqual([programTarget, merchantTarget].sort());
    for (const delivery of deliveries) {
      expect(delivery.status).toBe('pending');
      expect(delivery.enqueuedAt).not.toBeNull();
      const job = await api.deliveryQueue.getJob(delivery.id);
      expect(job?.data).toEqual({
        deliveryId: delivery.id,
        eventId: event.id,
        targetId: delivery.targetId,
        programId: tenant.programId,
        merchantId: tenant.merchantId,
        targetOwner: delivery.targetId === programTarget ? 'program' : 'merchant',
        // When the ingest stored the delivery: its partition key, which the worker reads by.
        storedAt: delivery.createdAt.toISOString(),
      });
      const owner = delivery.targetId === programTarget ? `program ${tenant.programId}` : `merchant ${tenant.merchantId}`;
      expect(job?.name).toBe(`${event.id} -> ${owner} target ${delivery.targetId}`);
      // A ceiling only: the worker stops at the attempts of the target's policy, read at each attempt.
      expect(job?.opts.attempts).toBe(MAX_DELIVERY_ATTEMPTS);
      // The delays come from the worker's backoff strategy (DELIVERY_BACKOFF_*), not from the job.
      expect(job?.opts.backoff).toEqual({ type: DELIVERY_BACKOFF_TYPE });
    }
  });

  it('sends events that are not transaction-related to the program target only', async () => {
    const event = ingestEvent(tenant, { objectType: 'subscription' });
    await api.ingest(event).expect(201);
    expect((await deliveriesOf(event.id)).map((d) => d.targetId)).toEqual([programTarget]);
  });

  it('sends program-wide events (no merchant) to the program target only', async () => {
    const event = ingestEvent({ programId: tenant.programId }, { objectType: 'payment' });
    await api.ingest(event).expect(201);
    expect((await deliveriesOf(event.id)).map((d) => d.targetId)).toEqual([programTarget]);
  });

  it("never sends a merchant another merchant's events", async () => {
    const other = (await api.admin('post', '/merchants').send({ programId: tenant.programId, name: 'Other' }).expect(201)).body as { id: string };
    const event = ingestEvent({ programId: tenant.programId, merchantId: other.id }, { objectType: 'refund' });
    await api.ingest(event).expect(201);
    expect((await deliveriesOf(event.id)).map((d) => d.targetId)).toEqual([programTarget]);
  });

  it('gives nothing to a disabled or deleted target, nor to one whose filters do not match', async () => {
    await setTarget(`/programs/${tenant.programId}/notification-target`, { enabled: false });
    await setTarget(`/merchants/${tenant.merchantId}/notification-target`, { notifications: { eventTypes: ['deleted'] } });
    const created = ingestEvent(tenant, { objectType: 'payment', eventType: 'created' });
    const deleted = ingestEvent(tenant, { objectType: 'payment', eventType: 'deleted' });
    await api.ingest({ events: [created, deleted] }).expect(201);
    expect(await deliveriesOf(created.id)).toEqual([]);
    expect((await deliveriesOf(deleted.id)).map((d) => d.targetId)).toEqual([merchantTarget]);

    await api.admin('delete', `/merchants/${tenant.merchantId}/notification-target`).expect(204);
    const later = ingestEvent(tenant, { objectType: 'payment', eventType: 'deleted' });
    await api.ingest(later).expect(201);
    expect(await deliveriesOf(later.id)).toEqual([]);
  });

  it('creates no new delivery and no new job when an event is posted again', async () => {
    const event = ingestEvent(tenant, { objectType: 'payment' });
    await api.ingest(event).expect(201);
    const first = await deliveriesOf(event.id);
    const jobsBefore = await api.deliveryQueue.getJobCounts();
    await api.ingest(event).expect(200);
    expect(await deliveriesOf(event.id)).toEqual(first);
    expect(await api.deliveryQueue.getJobCounts()).toEqual(jobsBefore);
  });

  it('puts no secret into jobs or logs', async () => {
    const password = `pw-${uniqueId()}`;
    // ?verify=false: no token endpoint answers at auth.merchant.example; this test is about jobs and logs.
    await setTarget(`/merchants/${tenant.merchantId}/notification-target?verify=false`, {
      auth: { mode: 'oauth', authUrl: 'https://auth.merchant.example/token', username: 'client', password },
    });
    const event = ingestEvent(tenant, { objectType: 'payment' });
    await api.ingest(event).expect(201);
    const jobs = await Promise.all((await deliveriesOf(event.id)).map((d) => api.deliveryQueue.getJob(d.id)));
    expect(jobs).toHaveLength(2);
    expect(JSON.stringify(jobs.map((j) => ({ name: j?.name, data: j?.data, opts: j?.opts })))).not.toContain(password);
    expect(api.logs()).not.toContain(password);
  });
});

describe('ingest while Redis is unreachable', () => {
  it('still answers 201 and stores the event with its deliveries, left for the sweeper', async () => {
    const tenant = await api.createTenant();
    await setTarget(`/programs/${tenant.programId}/notification-target`, {});

    const port = await closedPort();
    const config = loadApiConfig({ NODE_ENV: 'test', DATABASE_URL: testDatabaseUrl(), REDIS_URL: `redis://127.0.0.1:${port}`, QUEUE_PREFIX: uniqueId('test') });
    const databases = createApiDatabases(config);
    const redis = createRedisConnection(config.redisUrl, { role: 'client' });
    redis.on('error', () => undefined);
    const producer = createDeliveryProducer(redis, { prefix: config.queuePrefix, retry: config.retry, timeoutMs: config.enqueueTimeoutMs });
    producer.queue.on('error', () => undefined);
    const app = createApp({ config, databases, redis, producer, logger: createLogger({ level: 'error', service: 'test', stream: new PassThrough() }) });
    try {
      const event = ingestEvent(tenant, { objectType: 'payment' });
      const res = await request(app).post('/internal/events').set('Authorization', `Bearer ${config.ingestToken}`).send(event);
      expect(res.status).toBe(201);
      expect(await api.prisma.event.findFirst({ where: { id: event.id } })).not.toBeNull();
      const deliveries = await deliveriesOf(event.id);
      expect(deliveries).toHaveLength(1);
      expect(deliveries[0]!.enqueuedAt).toBeNull();
    } finally {
      await producer.close().catch(() => undefined);
      redis.disconnect();
      await closeApiDatabases(databases);
    }
  });
});

describe('the ingest answer names the deliveries it created', () => {
  it('answers one event as the event itself, with the deliveries and their targets in headers', async () => {
    const tenant = await api.createTenant();
    const programTarget = await setTarget(`/programs/${tenant.programId}/notification-target`, {});
    const merchantTarget = await setTarget(`/merchants/${tenant.merchantId}/notification-target`, {});
    const event = ingestEvent(tenant, { objectType: 'payment' });

    const res = await api.ingest(event).expect(201);

    const { programId: _p, merchantId: _m, ...stored } = event;
    expect(res.body).toEqual({ ...stored, sequence: 1 });
    expect(res.headers['herald-deliveries']).toBe('2');
    expect(res.headers['herald-delivery-targets']!.split(', ').sort()).toEqual([merchantTarget, programTarget].sort());
  });

  it('says 0 when no target takes the event, so a missing callback is visible at once', async () => {
    const tenant = await api.createTenant();
    await setTarget(`/merchants/${tenant.merchantId}/notification-target`, {});

    // A merchant's target takes transaction-related object types only, and the program has no target.
    const res = await api.ingest(ingestEvent(tenant, { objectType: 'subscription' })).expect(201);

    expect(res.headers['herald-deliveries']).toBe('0');
    expect(res.headers).not.toHaveProperty('herald-delivery-targets');
  });

  it('answers a batch with a deliveries entry per event beside the events, in the same order', async () => {
    const tenant = await api.createTenant();
    const merchantTarget = await setTarget(`/merchants/${tenant.merchantId}/notification-target`, {});
    const payment = ingestEvent(tenant, { objectType: 'payment' });
    const subscription = ingestEvent(tenant, { objectType: 'subscription' });

    const res = await api.ingest({ events: [payment, subscription] }).expect(201);

    expect(res.body.events.map((e: { id: string }) => e.id)).toEqual([payment.id, subscription.id]);
    const [delivery] = await deliveriesOf(payment.id);
    expect(res.body.deliveries).toEqual([
      { eventId: payment.id, count: 1, targets: [{ targetId: merchantTarget, targetOwner: 'merchant', deliveryId: delivery!.id }] },
      { eventId: subscription.id, count: 0, targets: [] },
    ]);
    expect(res.headers['herald-deliveries']).toBe('1');
    expect(res.headers['herald-delivery-targets']).toBe(merchantTarget);

    // Re-posted: stored before, so this request creates no delivery for it.
    const again = await api.ingest({ events: [payment] }).expect(200);
    expect(again.body.deliveries).toEqual([{ eventId: payment.id, count: 0, targets: [] }]);
    expect(again.headers['herald-deliveries']).toBe('0');
  });
});
