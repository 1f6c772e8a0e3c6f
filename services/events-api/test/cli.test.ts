import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closedPort, startService, testDatabaseUrl, testProcessEnv, uniqueId, type ServiceProcess } from '@herald/testing';

const ROOT = path.resolve(__dirname, '../../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
const CLI = path.join(ROOT, 'services/events-api/src/cli/herald.ts');
const ADMIN_TOKEN = randomBytes(24).toString('base64url');
const INGEST_TOKEN = randomBytes(24).toString('base64url');

let service: ServiceProcess;
let apiUrl: string;

beforeAll(async () => {
  service = startService('services/events-api/src/server.ts', {
    NODE_ENV: 'test',
    LOG_LEVEL: 'http',
    PORT: '0',
    DATABASE_URL: testDatabaseUrl(),
    QUEUE_PREFIX: uniqueId('cli'),
    ADMIN_TOKEN,
    INGEST_TOKEN,
  });
  const listening = await service.waitForLog('events-api listening');
  apiUrl = `http://127.0.0.1:${String(listening.port)}`;
});
afterAll(() => service.stop('SIGTERM'));

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  json: () => Record<string, unknown>;
}

/** Runs `pnpm herald …` as support staff would, with `stdin` piped in. */
function herald(args: string[], stdin = ''): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(TSX, [CLI, ...args], {
      cwd: ROOT,
      env: testProcessEnv({ HERALD_API_URL: apiUrl, ADMIN_TOKEN }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr, json: () => JSON.parse(stdout) as Record<string, unknown> }));
    child.stdin.end(stdin);
  });
}

/** A call of the running API with a token; expects `status`. */
async function call(method: 'POST' | 'PUT', pathname: string, token: string, body: object, status: number): Promise<{ id: string }> {
  const res = await fetch(`${apiUrl}${pathname}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(status);
  return (await res.json()) as { id: string };
}

const adminPost = (pathname: string, body: object) => call('POST', `/admin${pathname}`, ADMIN_TOKEN, body, 201);

/** A fresh program with one merchant, made through the running API. */
async function newTenant(): Promise<{ programId: string; merchantId: string }> {
  const program = await adminPost('/programs', { name: 'CLI program' });
  const merchant = await adminPost('/merchants', { programId: program.id, name: 'CLI merchant' });
  return { programId: program.id, merchantId: merchant.id };
}

describe('pnpm herald targets', () => {
  it('sets a merchant target with basic auth from a piped password, shows it masked, and deletes it', async () => {
    const { programId, merchantId } = await newTenant();
    const password = `pw-${randomUUID()}`;

    const set = await herald(
      ['targets', 'set', '--merchant', merchantId, '--url', 'https://shop.example/hooks', '--auth', 'basic', '--username', 'shop', '--password-stdin'],
      `${password}\n`,
    );
    expect(set).toMatchObject({ code: 0, stderr: '' });
    expect(set.json()).toMatchObject({
      programId,
      merchantId,
      url: 'https://shop.example/hooks',
      auth: { mode: 'basic', username: 'shop', password: '********' },
      notifications: {},
      enabled: true,
    });

    const get = await herald(['targets', 'get', '--merchant', merchantId]);
    expect(get.code).toBe(0);
    // With the target's delivery health, as the workers keep it in Redis: nothing sent yet.
    expect(get.json()).toEqual({
      ...set.json(),
      health: { breaker: { state: 'closed', consecutiveFailures: 0, openedAt: null, halfOpenAt: null, probeInFlight: false }, inFlight: 0, deferred: 0 },
    });

    const deleted = await herald(['targets', 'delete', '--merchant', merchantId]);
    expect(deleted.code).toBe(0);
    expect(deleted.json()).toEqual({ deleted: true, merchantId });

    const gone = await herald(['targets', 'get', '--merchant', merchantId]);
    expect(gone.code).toBe(1);
    expect(JSON.parse(gone.stderr)).toMatchObject({ status: 404 });

    for (const run of [set, get, deleted, gone]) expect(run.stdout + run.stderr).not.toContain(password);
    expect(service.output()).toContain(`"path":"/admin/merchants/${merchantId}/notification-target"`);
    expect(service.output()).not.toContain(password);
  });

  it('stores the password exactly as piped, without the trailing newline', async () => {
    const { programId } = await newTenant();
    const set = await herald(
      [
        'targets', 'set', '--program', programId, '--url', 'https://shop.example/hooks', '--auth', 'oauth',
        '--auth-url', 'https://shop.example/token', '--username', 'client', '--password-stdin', '--no-verify',
        '--token-request', 'form', '--scope', 'callbacks',
        '--object-types', 'payment, refund', '--event-types', 'created,status.updated', '--disabled',
      ],
      'pass word with spaces\r\n',
    );
    expect(set.code).toBe(0);
    expect(set.json()).toMatchObject({
      auth: { mode: 'oauth', authUrl: 'https://shop.example/token', username: 'client', password: '********', tokenRequest: 'form', scope: 'callbacks' },
      notifications: { objectTypes: ['payment', 'refund'], eventTypes: ['created', 'status.updated'] },
      enabled: false,
    });
  });

  it('sends a test callback and prints what happened, exiting 1 when it was not delivered', async () => {
    const { programId, merchantId } = await newTenant();
    const receiver = createServer((req, res) => {
      req.resume();
      res.writeHead(req.headers['herald-test'] === 'true' ? 200 : 400).end('ok');
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      expect((await herald(['targets', 'set', '--program', programId, '--url', hook, '--auth', 'none'])).code).toBe(0);
      const delivered = await herald(['targets', 'test', '--program', programId]);
      expect(delivered.code).toBe(0);
      expect(delivered.json()).toMatchObject({ delivered: true, statusCode: 200, responseBody: 'ok' });

      const refused = `http://127.0.0.1:${await closedPort()}/hook`;
      expect((await herald(['targets', 'set', '--merchant', merchantId, '--url', refused, '--auth', 'none'])).code).toBe(0);
      const failed = await herald(['targets', 'test', '--merchant', merchantId]);
      expect(failed.code).toBe(1);
      expect(failed.json()).toMatchObject({ delivered: false, errorKind: 'connection' });
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it('prints the problem of a refused request on stderr and exits 1', async () => {
    const { merchantId } = await newTenant();
    const run = await herald(['targets', 'set', '--merchant', merchantId, '--url', 'https://shop.example/', '--auth', 'none', '--object-types', 'subscription']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(JSON.parse(run.stderr)).toMatchObject({ status: 400, errors: [{ pointer: '/notifications/objectTypes/0' }] });
  });

  it('refuses a password on the command line without echoing it', async () => {
    for (const args of [['--password', 'hunter2-cli'], ['--password=hunter2-cli']]) {
      const run = await herald(['targets', 'set', '--program', 'p1', '--url', 'https://shop.example/', '--auth', 'basic', '--username', 'u', ...args]);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/--password-stdin/);
      expect(run.stdout + run.stderr).not.toContain('hunter2-cli');
    }
  });

  it.each([
    [['targets', 'get'], /exactly one of --program <id> and --merchant <id>/],
    [['targets', 'get', '--program', 'a', '--merchant', 'b'], /exactly one of/],
    [['targets', 'list', '--program', 'a'], /expected "targets set", "targets get", "targets delete", "targets test" or "targets signing-secret show\|rotate"/],
    [['targets', 'signing-secret', '--program', 'a'], /expected "targets set", .* or "targets signing-secret show\|rotate", got "targets signing-secret"/],
    [['targets', 'get', '--program', 'a', '--show-secret'], /--show-secret only goes with "targets signing-secret rotate"/],
    [['targets', 'set', '--program', 'a', '--auth', 'none'], /--url is required/],
    [['targets', 'set', '--program', 'a', '--url', 'https://x.example/'], /--auth none, --auth basic or --auth oauth is required/],
    [['targets', 'set', '--program', 'a', '--url', 'https://x.example/', '--auth', 'basic', '--username', 'u'], /--auth basic needs --password-stdin/],
    [['targets', 'set', '--program', 'a', '--url', 'https://x.example/', '--auth', 'none', '--username', 'u'], /--username does not go with --auth none/],
    [['targets', 'get', '--program', 'a', '--url', 'https://x.example/'], /--url only go with "targets set"/],
    [['targets', 'test', '--program', 'a', '--no-verify'], /--no-verify only go with "targets set"/],
    [['targets', 'set', '--program', 'a', '--url', 'https://x.example/', '--auth', 'none', '--scope', 's'], /--scope does not go with --auth none/],
    [['targets', 'get', '--program', 'a', '--colour=red'], /: Unknown option '--colour'\.\n/],
  ])('explains a wrong command line %j and exits 2', async (args, message) => {
    const run = await herald(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toMatch(/pnpm herald --help/);
  });

  it('prints the signing secret only when asked by name: signing-secret show, or rotate --show-secret', async () => {
    const { merchantId } = await newTenant();
    await call('PUT', `/admin/merchants/${merchantId}/notification-target`, ADMIN_TOKEN, { url: 'https://shop.example/hooks', auth: { mode: 'none' } }, 200);

    const shown = await herald(['targets', 'signing-secret', 'show', '--merchant', merchantId]);
    expect(shown).toMatchObject({ code: 0, stderr: '' });
    const first = shown.json().secret as string;
    expect(first).toMatch(/^whsec_/);

    const rotated = await herald(['targets', 'signing-secret', 'rotate', '--merchant', merchantId]);
    expect(rotated.code).toBe(0);
    expect(rotated.json()).toMatchObject({ rotated: true, secret: expect.stringMatching(/^hidden: /), previousSecretExpiresAt: expect.any(String) });
    const second = (await herald(['targets', 'signing-secret', 'show', '--merchant', merchantId])).json().secret as string;
    expect(second).not.toBe(first);
    expect(rotated.stdout).not.toContain(second);

    const third = await herald(['targets', 'signing-secret', 'rotate', '--merchant', merchantId, '--show-secret']);
    expect(third.json().secret).toMatch(/^whsec_/);
    expect(third.json().secret).not.toBe(second);
    for (const secret of [first, second]) expect(service.output()).not.toContain(secret.slice('whsec_'.length));
  });

  it('prints its usage with --help', async () => {
    const run = await herald(['--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage:\n {2}pnpm herald targets set/);
    expect(run.stdout).toMatch(/\n {2}pnpm herald deliveries replay /);
  });
});

describe('pnpm herald deliveries', () => {
  /** A merchant with a target and one payment event: one delivery, its job waiting (no worker runs here). */
  async function oneDelivery(): Promise<{ merchantId: string; eventId: string; deliveryId: string }> {
    const { programId, merchantId } = await newTenant();
    await call('PUT', `/admin/merchants/${merchantId}/notification-target`, ADMIN_TOKEN, { url: 'https://shop.example/hooks', auth: { mode: 'none' } }, 200);
    const eventId = `Event-${randomUUID()}`;
    await call('POST', '/internal/events', INGEST_TOKEN, { id: eventId, programId, merchantId, origin: 'api', eventType: 'created', objectId: 'pay-1', objectType: 'payment' }, 201);
    const list = await herald(['deliveries', 'list', '--merchant', merchantId]);
    expect(list.code).toBe(0);
    const page = list.json() as { count: number; data: Array<{ id: string; eventId: string }> };
    expect(page).toMatchObject({ page: 1, count: 1, data: [{ eventId }] });
    return { merchantId, eventId, deliveryId: page.data[0]!.id };
  }

  it('lists, shows and replays deliveries over the admin API', async () => {
    const { merchantId, eventId, deliveryId } = await oneDelivery();

    const shown = await herald(['deliveries', 'show', deliveryId]);
    expect(shown.code).toBe(0);
    expect(shown.json()).toMatchObject({ id: deliveryId, eventId, status: 'pending', attempts: [] });

    const ofEvent = await herald(['deliveries', 'show', '--event', eventId]);
    expect(ofEvent.json()).toMatchObject({ eventId, data: [{ id: deliveryId }] });

    const one = await herald(['deliveries', 'replay', deliveryId]);
    expect(one.code).toBe(0);
    expect(one.json()).toMatchObject({ deliveries: [{ id: deliveryId, status: 'pending', job: 'already-queued' }], more: false });

    const bulk = await herald(['deliveries', 'replay', '--merchant', merchantId, '--status', 'pending', '--limit', '5']);
    expect(bulk.code).toBe(0);
    expect(bulk.json()).toMatchObject({ deliveries: [{ id: deliveryId }], more: false });

    const paged = await herald(['deliveries', 'list', '--merchant', merchantId, '--page', '2', '--page-size', '1']);
    expect(paged.json()).toMatchObject({ page: 2, pageSize: 1, count: 1, data: [] });
  });

  it('sends a test callback and prints what happened, exiting 1 when it was not delivered', async () => {
    const { programId, merchantId } = await newTenant();
    const receiver = createServer((req, res) => {
      req.resume();
      res.writeHead(req.headers['herald-test'] === 'true' ? 200 : 400).end('ok');
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      expect((await herald(['targets', 'set', '--program', programId, '--url', hook, '--auth', 'none'])).code).toBe(0);
      const delivered = await herald(['targets', 'test', '--program', programId]);
      expect(delivered.code).toBe(0);
      expect(delivered.json()).toMatchObject({ delivered: true, statusCode: 200, responseBody: 'ok' });

      const refused = `http://127.0.0.1:${await closedPort()}/hook`;
      expect((await herald(['targets', 'set', '--merchant', merchantId, '--url', refused, '--auth', 'none'])).code).toBe(0);
      const failed = await herald(['targets', 'test', '--merchant', merchantId]);
      expect(failed.code).toBe(1);
      expect(failed.json()).toMatchObject({ delivered: false, errorKind: 'connection' });
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it('prints the problem of a refused request on stderr and exits 1', async () => {
    const unbounded = await herald(['deliveries', 'replay', '--status', 'failed']);
    expect(unbounded.code).toBe(1);
    expect(JSON.parse(unbounded.stderr)).toMatchObject({ status: 400 });
    const missing = await herald(['deliveries', 'show', randomUUID()]);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stderr)).toMatchObject({ status: 404 });
  });

  it.each([
    [['deliveries', 'show'], /needs a delivery id or --event <eventId> alone/],
    [['deliveries', 'show', 'd1', '--status', 'failed'], /takes no other option/],
    [['deliveries', 'list', '--limit', '3'], /--limit can only be used with "deliveries replay"/],
    [['deliveries', 'replay', '--page', '2'], /--page can only be used with "deliveries list"/],
    [['deliveries', 'replay', '--merchant', 'm1', '--limit', 'ten'], /--limit must be a whole number/],
    [['deliveries', 'retry'], /expected "deliveries list", "deliveries show" or "deliveries replay"/],
    [['delivery', 'list'], /expected "targets …" or "deliveries …", got "delivery"/],
  ])('explains a wrong command line %j and exits 2', async (args, message) => {
    const run = await herald(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
  });
});
