// Support's path through an auto-disabled target, end to end: the events-api and a delivery-worker
// in their own processes, a merchant's HTTP receiver, and the `herald` CLI as support runs it.
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { createPrismaClient } from '@herald/db/prisma';
import {
  requestJson,
  runCommand,
  startHttpRecorder,
  startService,
  testDatabaseUrl,
  uniqueId,
  type CommandRun,
  type HttpRecorder,
  type ServiceProcess,
  waitFor,
} from '@herald/testing';

const ROOT = path.resolve(__dirname, '../../..');
const HERALD = path.join(ROOT, 'node_modules/.bin/herald');
const ADMIN_TOKEN = randomBytes(24).toString('base64url');
const INGEST_TOKEN = randomBytes(24).toString('base64url');
const QUEUE_PREFIX = uniqueId('cli_disable');
const PASSWORD = `pw-${randomUUID()}`;

let api: ServiceProcess;
let worker: ServiceProcess;
let merchant: HttpRecorder;
let apiUrl: string;
let merchantAnswers = 500;
const prisma = createPrismaClient(testDatabaseUrl());

beforeAll(async () => {
  // One queue for both processes; the test setup removes its keys after the file.
  const shared = { NODE_ENV: 'test', DATABASE_URL: testDatabaseUrl(), QUEUE_PREFIX };
  api = startService('services/events-api/src/server.ts', { ...shared, LOG_LEVEL: 'info', PORT: '0', ADMIN_TOKEN, INGEST_TOKEN });
  worker = startService('services/delivery-worker/src/main.ts', {
    ...shared,
    LOG_LEVEL: 'info',
    METRICS_PORT: '0',
    TARGET_AUTO_DISABLE_AFTER: '1h',
    DELIVERY_ATTEMPTS: '5',
    DELIVERY_BACKOFF_MS: '50',
  });
  merchant = await startHttpRecorder(() => ({ status: merchantAnswers, body: merchantAnswers === 200 ? '' : 'shop says: database down' }));
  apiUrl = `http://127.0.0.1:${String((await api.waitForLog('events-api listening')).port)}`;
  await worker.waitForLog('delivery-worker ready');
}, 60_000);

afterAll(async () => {
  await Promise.all([api.stop('SIGTERM'), worker.stop('SIGTERM'), merchant.close()]);
  await prisma.$disconnect();
});

function herald(args: string[], stdin = ''): Promise<CommandRun> {
  return runCommand(HERALD, args, { HERALD_API_URL: apiUrl, ADMIN_TOKEN }, { stdin });
}

async function heraldJson<T = Record<string, unknown>>(args: string[], stdin = ''): Promise<T> {
  const run = await herald([...args, '--json'], stdin);
  expect(run).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(run.stdout) as T;
}

/** Polls the delivery through the CLI until its status is `status`. */
async function deliveryReaches(deliveryId: string, status: string): Promise<Record<string, unknown>> {
  // Each read runs the CLI (a process): every 100 ms, not at waitFor's default pace.
  return waitFor(
    () => heraldJson(['deliveries', 'show', deliveryId]),
    (delivery) => delivery.status === status,
    30_000,
    `delivery ${deliveryId} to be ${status}`,
    100,
  );
}

it('shows an auto-disabled target, and after a fix without the password, replays its delivery with the stored credentials', async () => {
  const program = await heraldJson<{ id: string }>(['programs', 'create', '--name', 'Auto-disable program']);
  const shop = await heraldJson<{ id: string }>(['merchants', 'create', '--program', program.id, '--name', 'Failing shop']);
  const target = await heraldJson<{ id: string }>(
    ['targets', 'set', '--merchant', shop.id, '--url', `${merchant.origin}/hooks`, '--auth', 'basic', '--username', 'shop', '--password-stdin'],
    PASSWORD,
  );
  // Every attempt has failed for two hours already: the next failure is the last straw.
  await prisma.notificationTarget.update({ where: { id: target.id }, data: { failingSince: new Date(Date.now() - 2 * 3_600_000) } });

  const eventId = `Event-${randomUUID()}`;
  const ingested = await requestJson('POST', `${apiUrl}/internal/events`, {
    token: INGEST_TOKEN,
    body: {
      id: eventId,
      programId: program.id,
      merchantId: shop.id,
      origin: 'api',
      eventType: 'created',
      objectId: 'pay-1',
      objectType: 'payment',
    },
  });
  expect(ingested.status).toBe(201);
  const { data } = await heraldJson<{ data: Array<{ id: string }> }>(['deliveries', 'list', '--event', eventId]);
  const deliveryId = data[0]!.id;

  const failed = await deliveryReaches(deliveryId, 'failed');
  expect(failed.lastError).toMatch(/the notification target is auto-disabled$/);
  expect(merchant.requests).toHaveLength(1);
  await worker.waitForLog('notification target auto-disabled: every attempt failed for TARGET_AUTO_DISABLE_AFTER');

  // The merchant's answer, without --json: what support looks at first.
  const history = await herald(['deliveries', 'show', deliveryId]);
  expect(history.code).toBe(0);
  expect(history.stdout).toMatch(/\nthe merchant's answers:\n {2}#1 \(HTTP 500\) {2}shop says: database down\n/);

  // What support sees: the table row and the target itself.
  const listed = await herald(['targets', 'list', '--merchant', shop.id]);
  expect(listed.code).toBe(0);
  expect(listed.stdout).toMatch(/^ID +OWNER +URL +AUTH +ORDERING +ENABLED +LAST SUCCESS +FAILING SINCE\n/);
  expect(listed.stdout).toContain(`merchant ${shop.id}`);
  expect(listed.stdout).toMatch(/ basic +none +no \(auto-disabled\) +- +\d{4}-/);
  const shown = await herald(['targets', 'show', '--merchant', shop.id]);
  expect(shown.stdout).toMatch(/^enabled +false$/m);
  expect(shown.stdout).toMatch(/^disabledReason +auto-disabled$/m);
  expect(shown.stdout).toMatch(/^health\.failingSince +\d{4}-/m);
  expect(shown.stdout).toMatch(/^auth\.password +\*{8}$/m);

  // The merchant fixes the endpoint; support moves the URL and switches the target on, no password needed.
  merchantAnswers = 200;
  const moved = await heraldJson(['targets', 'update', '--merchant', shop.id, '--url', `${merchant.origin}/v2/hooks`]);
  expect(moved).toMatchObject({ enabled: false, disabledReason: 'auto-disabled' });
  const enabled = await heraldJson(['targets', 'enable', '--merchant', shop.id]);
  expect(enabled).toMatchObject({ enabled: true, disabledReason: null, disabledAt: null, health: { failingSince: null } });

  const replayed = await herald(['deliveries', 'replay', deliveryId]);
  expect(replayed.code).toBe(0);
  expect(replayed.stdout).toMatch(/^ID +STATUS +JOB\n/);
  await deliveryReaches(deliveryId, 'succeeded');
  const delivered = merchant.requests.at(-1)!;
  expect(delivered.url).toBe('/v2/hooks');
  // The stored credentials, kept through update and enable.
  expect(delivered.headers.authorization).toBe(`Basic ${Buffer.from(`shop:${PASSWORD}`).toString('base64')}`);

  const healthy = await heraldJson<{ health: { lastSuccessAt: string | null; failingSince: string | null } }>(['targets', 'show', '--merchant', shop.id]);
  expect(healthy.health).toMatchObject({ lastSuccessAt: expect.any(String), failingSince: null, breaker: { state: 'closed' } });
  expect(api.output() + worker.output()).not.toContain(PASSWORD);
}, 90_000);
