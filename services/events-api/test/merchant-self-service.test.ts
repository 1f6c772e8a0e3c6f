// A merchant finds its failed callback without support, end to end: the events-api and a
// delivery-worker in their own processes, the merchant's HTTP receiver failing every callback, and
// the merchant's own key on the merchant API (GET /deliveries, /deliveries/{id}, /notification-target).
import { randomBytes, randomUUID } from 'node:crypto';
import { createPrismaClient } from '@herald/db/prisma';
import { callJson, startHttpRecorder, startService, testDatabaseUrl, uniqueId, waitFor, type HttpRecorder, type ServiceProcess } from '@herald/testing';

const ADMIN_TOKEN = randomBytes(24).toString('base64url');
const INGEST_TOKEN = randomBytes(24).toString('base64url');
const PASSWORD = `pw-${randomUUID()}`;
const DAY = 86_400_000;

let api: ServiceProcess;
let worker: ServiceProcess;
let receiver: HttpRecorder;
let apiUrl: string;
const prisma = createPrismaClient(testDatabaseUrl());

beforeAll(async () => {
  // One queue for both processes (the test setup removes its keys after the file); the worker counts each delivery's attempts (DELIVERY_ATTEMPTS, the policy default).
  const shared = { NODE_ENV: 'test', DATABASE_URL: testDatabaseUrl(), QUEUE_PREFIX: uniqueId('merchant_self'), LOG_LEVEL: 'info', DELIVERY_ATTEMPTS: '2' };
  api = startService('services/events-api/src/server.ts', { ...shared, PORT: '0', ADMIN_TOKEN, INGEST_TOKEN });
  worker = startService('services/delivery-worker/src/main.ts', { ...shared, METRICS_PORT: '0', DELIVERY_BACKOFF_MS: '50' });
  // The merchant's endpoint is down, and echoes what it got, credentials included.
  receiver = await startHttpRecorder((req) => ({ status: 500, body: `shop down; you sent ${req.headers.authorization ?? 'nothing'}` }));
  apiUrl = `http://127.0.0.1:${String((await api.waitForLog('events-api listening')).port)}`;
  await worker.waitForLog('delivery-worker ready');
}, 60_000);

afterAll(async () => {
  await Promise.all([api.stop('SIGTERM'), worker.stop('SIGTERM'), receiver.close()]);
  await prisma.$disconnect();
});

const admin = <T>(method: string, path: string, body?: unknown) => callJson<T>(method, `${apiUrl}/admin${path}`, { token: ADMIN_TOKEN, body });

/** A GET of the merchant API with the five headers every request carries. */
const asMerchant = <T>(key: string, path: string) =>
  callJson<T>('GET', `${apiUrl}${path}`, {
    headers: {
      'x-api-key': key,
      'content-type': 'application/json',
      'accept-language': 'en-US',
      origin: 'https://shop.example',
      'user-agent': 'merchant-tests',
    },
  });

it('lets a merchant find its failed callback, every attempt with its answer redacted, and when its failing target would be switched off', async () => {
  const program = await admin<{ id: string }>('POST', '/programs', { name: 'Self-service program' });
  const shop = await admin<{ id: string }>('POST', '/merchants', { programId: program.id, name: 'Failing shop' });
  const { key } = await admin<{ key: string }>('POST', '/api-keys', { merchantId: shop.id });
  const target = await admin<{ id: string }>('PUT', `/merchants/${shop.id}/notification-target`, {
    url: `${receiver.origin}/hooks?secret=${PASSWORD}`,
    auth: { mode: 'basic', username: 'shop', password: PASSWORD },
  });
  // Every callback has failed for a day and a bit already.
  const failingSince = new Date(Date.now() - DAY - 60_000);
  await prisma.notificationTarget.update({ where: { id: target.id }, data: { failingSince } });

  const eventId = `Event-${randomUUID()}`;
  await callJson('POST', `${apiUrl}/internal/events`, {
    token: INGEST_TOKEN,
    body: { id: eventId, programId: program.id, merchantId: shop.id, origin: 'api', eventType: 'created', objectId: 'pay-1', objectType: 'payment' },
  });

  type Page = { count: number; data: Array<{ id: string; eventId: string; status: string; attemptsMade: number; lastStatusCode: number }> };
  const failed = await waitFor(
    () => asMerchant<Page>(key, '/deliveries?status=failed'),
    // The page and its count are two reads: a delivery that fails between them is counted first.
    (page) => page.count === 1 && page.data.length === 1,
    30_000,
    'the callback to fail for good',
  );
  expect(failed.data[0]).toMatchObject({ eventId, status: 'failed', attemptsMade: 2, lastStatusCode: 500 });
  expect(receiver.requests).toHaveLength(2);

  const detail = await asMerchant<{ attempts: Array<{ number: number; statusCode: number; responseBody: string }> }>(key, `/deliveries/${failed.data[0]!.id}`);
  expect(detail.attempts.map((a) => [a.number, a.statusCode])).toEqual([
    [1, 500],
    [2, 500],
  ]);
  expect(detail.attempts[0]!.responseBody).toBe('shop down; you sent [REDACTED]');

  const health = await asMerchant<Record<string, unknown>>(key, '/notification-target');
  expect(health).toMatchObject({
    url: `${receiver.origin}/hooks?secret=***`,
    authMode: 'basic',
    enabled: true,
    failingSince: failingSince.toISOString(),
    autoDisableAt: new Date(failingSince.getTime() + 5 * DAY).toISOString(),
    warning: expect.stringContaining(new Date(failingSince.getTime() + 5 * DAY).toISOString()),
  });

  const basic = Buffer.from(`shop:${PASSWORD}`).toString('base64');
  for (const text of [JSON.stringify([failed, detail, health]), api.output(), worker.output()]) {
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain(basic);
  }
}, 60_000);
