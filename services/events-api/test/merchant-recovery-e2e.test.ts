// A merchant recovers the callbacks it missed, end to end: the events-api and a delivery-worker in
// their own processes, the merchant's HTTP receiver on 127.0.0.1 down and then back, and the
// merchant's own key on POST /deliveries/recover and GET /deliveries/recoveries/{id}. The
// recovered callbacks go through the real queue, target gate and worker.
import { randomBytes, randomUUID } from 'node:crypto';
import {
  callbacksPerEvent,
  callJson,
  startHttpRecorder,
  startService,
  testDatabaseUrl,
  uniqueId,
  waitFor,
  type HttpRecorder,
  type ServiceProcess,
} from '@herald/testing';

const ADMIN_TOKEN = randomBytes(24).toString('base64url');
const INGEST_TOKEN = randomBytes(24).toString('base64url');
const PASSWORD = `pw-${randomUUID()}`;

let api: ServiceProcess;
let worker: ServiceProcess;
let receiver: HttpRecorder;
let apiUrl: string;
let down = true;

beforeAll(async () => {
  // One queue for both processes (the test setup removes its keys after the file); the API gives each job its attempts.
  const shared = { NODE_ENV: 'test', DATABASE_URL: testDatabaseUrl(), QUEUE_PREFIX: uniqueId('merchant_recovery'), LOG_LEVEL: 'info', DELIVERY_ATTEMPTS: '2' };
  api = startService('services/events-api/src/server.ts', { ...shared, PORT: '0', ADMIN_TOKEN, INGEST_TOKEN });
  worker = startService('services/delivery-worker/src/main.ts', { ...shared, METRICS_PORT: '0', DELIVERY_BACKOFF_MS: '50' });
  // The merchant's endpoint: down (500, echoing the credentials it got) until the test brings it back.
  receiver = await startHttpRecorder((req) =>
    down ? { status: 500, body: `shop down; you sent ${req.headers.authorization ?? 'nothing'}` } : { status: 200 },
  );
  apiUrl = `http://127.0.0.1:${String((await api.waitForLog('events-api listening')).port)}`;
  await worker.waitForLog('delivery-worker ready');
}, 60_000);

afterAll(async () => {
  await Promise.all([api.stop('SIGTERM'), worker.stop('SIGTERM'), receiver.close()]);
});

const admin = <T>(method: string, path: string, body?: unknown) => callJson<T>(method, `${apiUrl}/admin${path}`, { token: ADMIN_TOKEN, body });

/** A request of the merchant API with the five headers every request carries. */
const asMerchant = <T>(key: string, method: string, path: string, body?: unknown, expect?: number[]) =>
  callJson<T>(method, `${apiUrl}${path}`, {
    headers: {
      'x-api-key': key,
      'content-type': 'application/json',
      'accept-language': 'en-US',
      origin: 'https://shop.example',
      'user-agent': 'merchant-tests',
    },
    body,
    ...(expect ? { expect } : {}),
  });

type Recovery = { id: string; status: string; queued: number; neverSent: number; pending: number; sent: number; delivered: number; failed: number };

it('recovers the failed callbacks and those of events produced while the target was off, each delivered once, none sent twice', async () => {
  const program = await admin<{ id: string }>('POST', '/programs', { name: 'Recovery program' });
  const shop = await admin<{ id: string }>('POST', '/merchants', { programId: program.id, name: 'Recovering shop' });
  const { key } = await admin<{ key: string }>('POST', '/api-keys', { merchantId: shop.id });
  await admin('PUT', `/merchants/${shop.id}/notification-target`, {
    url: `${receiver.origin}/hooks?secret=${PASSWORD}`,
    auth: { mode: 'basic', username: 'shop', password: PASSWORD },
  });
  const ingest = async (objectId: string) => {
    const id = `Event-${randomUUID()}`;
    await callJson('POST', `${apiUrl}/internal/events`, {
      token: INGEST_TOKEN,
      body: {
        id,
        programId: program.id,
        merchantId: shop.id,
        origin: 'api',
        eventType: 'created',
        objectId,
        objectType: 'payment',
        createdAt: new Date().toISOString(),
      },
    });
    return id;
  };
  const from = new Date(Date.now() - 60_000).toISOString();

  // 1. A callback fails for good while the endpoint is down.
  const failed = await ingest('pay-1');
  await waitFor(
    () => asMerchant<{ count: number }>(key, 'GET', '/deliveries?status=failed'),
    (page) => page.count === 1,
    30_000,
    'the first callback to fail for good',
  );
  // 2. Support switches the target off; two events happen meanwhile, and no callback is sent for them.
  await admin('PATCH', `/merchants/${shop.id}/notification-target`, { enabled: false });
  const whileOff = [await ingest('pay-2'), await ingest('pay-3')];
  const refused = await asMerchant<{ type: string }>(key, 'POST', '/deliveries/recover', { from }, [409]);
  expect(refused.type).toBe('/problems/target_switched_off');
  // 3. The endpoint is fixed and the target switched on; a new event is delivered at once.
  down = false;
  await admin('PATCH', `/merchants/${shop.id}/notification-target`, { enabled: true });
  const delivered = await ingest('pay-4');
  await waitFor(
    () => callbacksPerEvent(receiver).get(delivered),
    (count) => count === 1,
    30_000,
    'the callback of the event after the switch-on',
  );

  // 4. The merchant recovers: the failed callback and the two never sent, not the delivered one.
  const started = await asMerchant<Recovery>(key, 'POST', '/deliveries/recover', { from });
  expect(started).toMatchObject({ status: 'running', queued: 3, neverSent: 2 });
  const finished = await waitFor(
    () => asMerchant<Recovery>(key, 'GET', `/deliveries/recoveries/${started.id}`),
    (recovery) => recovery.status === 'finished',
    30_000,
    'the recovery to finish',
  );
  expect(finished).toMatchObject({ queued: 3, pending: 0, sent: 3, delivered: 3, failed: 0 });
  const perEvent = callbacksPerEvent(receiver);
  // The failed event: its two failed attempts, then the recovered one; every other event exactly once.
  expect([failed, ...whileOff, delivered].map((id) => perEvent.get(id))).toEqual([3, 1, 1, 1]);

  // 5. Everything is delivered: recovering again queues nothing, and nothing more arrives.
  const again = await asMerchant<Recovery>(key, 'POST', '/deliveries/recover', { from });
  expect(again).toMatchObject({ queued: 0, status: 'finished' });
  expect(receiver.requests).toHaveLength(6);

  const basic = Buffer.from(`shop:${PASSWORD}`).toString('base64');
  for (const text of [JSON.stringify([started, finished, again]), api.output(), worker.output()]) {
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain(basic);
  }
}, 90_000);

it("recovers an ordered target's failed callbacks of one object in sequence order", async () => {
  down = true;
  const program = await admin<{ id: string }>('POST', '/programs', { name: 'Ordered recovery program' });
  const shop = await admin<{ id: string }>('POST', '/merchants', { programId: program.id, name: 'Ordered shop' });
  const { key } = await admin<{ key: string }>('POST', '/api-keys', { merchantId: shop.id });
  await admin('PUT', `/merchants/${shop.id}/notification-target`, { url: `${receiver.origin}/ordered`, auth: { mode: 'none' }, ordering: 'object' });
  const from = new Date(Date.now() - 60_000).toISOString();
  const events = Array.from({ length: 4 }, () => ({
    id: `Event-${randomUUID()}`,
    programId: program.id,
    merchantId: shop.id,
    origin: 'api',
    eventType: 'updated',
    objectId: 'pay-ordered',
    objectType: 'payment',
  }));
  await callJson('POST', `${apiUrl}/internal/events`, { token: INGEST_TOKEN, body: { events } });
  // Each fails for good (two attempts), one after the other.
  await waitFor(
    () => asMerchant<{ count: number }>(key, 'GET', '/deliveries?status=failed'),
    (page) => page.count === 4,
    60_000,
    'the four callbacks to fail for good',
  );
  const before = receiver.requests.length;

  down = false;
  const started = await asMerchant<Recovery>(key, 'POST', '/deliveries/recover', { from });
  expect(started).toMatchObject({ queued: 4 });
  await waitFor(
    () => asMerchant<Recovery>(key, 'GET', `/deliveries/recoveries/${started.id}`),
    (recovery) => recovery.status === 'finished',
    30_000,
    'the recovery to finish',
  );
  const recovered = receiver.requests.slice(before).map((request) => (JSON.parse(request.body) as { sequence: number }).sequence);
  expect(recovered).toEqual([1, 2, 3, 4]);
}, 90_000);
