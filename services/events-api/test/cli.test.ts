import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  always,
  callJson,
  closedPort,
  runCommand,
  startHttpRecorder,
  startCommand,
  startService,
  testDatabaseUrl,
  uniqueId,
  type CommandRun,
  type ServiceProcess,
} from '@herald/testing';

const ROOT = path.resolve(__dirname, '../../..');
// The package's bin, as `pnpm exec herald` and node_modules/.bin/herald run it.
const HERALD = path.join(ROOT, 'node_modules/.bin/herald');
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

interface CliRun extends CommandRun {
  json: () => Record<string, unknown>;
}

/** Runs `herald …` as support staff would, with `stdin` piped in. */
function herald(args: string[], stdin = ''): Promise<CliRun> {
  return spawnCli(HERALD, args, stdin);
}

async function spawnCli(command: string, args: string[], stdin = ''): Promise<CliRun> {
  const run = await runCommand(command, args, { HERALD_API_URL: apiUrl, ADMIN_TOKEN }, { stdin });
  return { ...run, json: () => JSON.parse(run.stdout) as Record<string, unknown> };
}

/** A call of the running API with a token; expects `status`. */
async function call(method: 'POST' | 'PUT', pathname: string, token: string, body: object, status: number): Promise<{ id: string }> {
  return callJson<{ id: string }>(method, `${apiUrl}${pathname}`, { token, body, expect: [status] });
}

const adminPost = (pathname: string, body: object) => call('POST', `/admin${pathname}`, ADMIN_TOKEN, body, 201);

/** A fresh program with one merchant, made through the running API. */
async function newTenant(): Promise<{ programId: string; merchantId: string }> {
  const program = await adminPost('/programs', { name: 'CLI program' });
  const merchant = await adminPost('/merchants', { programId: program.id, name: 'CLI merchant' });
  return { programId: program.id, merchantId: merchant.id };
}

describe('herald programs, merchants and api-keys', () => {
  it('creates a program, a merchant and a key, lists them as tables and as JSON, and revokes the key', async () => {
    const program = await herald(['programs', 'create', '--name', 'Table program']);
    expect(program.code).toBe(0);
    const programId = /^id +(\S+)$/m.exec(program.stdout)![1]!;
    expect(program.stdout).toMatch(/^name +Table program$/m);

    const merchant = await herald(['merchants', 'create', '--json', '--program', programId, '--name', 'Table shop', '--id', `shop-${randomUUID()}`]);
    const merchantId = (merchant.json() as { id: string }).id;
    expect(merchant.json()).toMatchObject({ programId, name: 'Table shop' });

    const merchants = await herald(['merchants', 'list', '--program', programId]);
    expect(merchants.stdout).toMatch(/^ID +PROGRAM +NAME +CREATED\n/);
    expect(merchants.stdout).toMatch(new RegExp(`^${merchantId} +${programId} +Table shop +\\d{4}-`, 'm'));
    expect(merchants.stdout).toMatch(/\nPage 1 of 1 \(1 in all\)\n$/);
    expect((await herald(['merchants', 'list', '--json', '--program', programId])).json()).toMatchObject({ count: 1, data: [{ id: merchantId }] });

    const created = await herald(['api-keys', 'create', '--merchant', merchantId]);
    expect(created.code).toBe(0);
    const key = /^key +(hk_\S+)$/m.exec(created.stdout)![1]!;
    const keyId = /^id +(\S+)$/m.exec(created.stdout)![1]!;
    expect(created.stdout).toContain('shown this once');
    expect((await fetch(`${apiUrl}/events`, { headers: eventHeaders(key) })).status).toBe(200);

    const keys = await herald(['api-keys', 'list', '--program', programId]);
    expect(keys.stdout).toMatch(/^ID +PREFIX +PROGRAM +MERCHANT +CREATED +REVOKED\n/);
    expect(keys.stdout).toMatch(new RegExp(`^${keyId} +hk_\\S+ +- +${merchantId} +\\S+ +-$`, 'm'));
    expect(keys.stdout).not.toContain(key);

    const revoked = await herald(['api-keys', 'revoke', keyId, '--json']);
    expect(revoked.json()).toMatchObject({ id: keyId, revokedAt: expect.any(String) });
    expect((await fetch(`${apiUrl}/events`, { headers: eventHeaders(key) })).status).toBe(401);
    const listed = (await herald(['api-keys', 'list', '--json', '--merchant', merchantId])).json() as { data: Array<{ revokedAt: string | null }> };
    expect(listed.data[0]!.revokedAt).toEqual(expect.any(String));

    const programs = await herald(['programs', 'list', '--page-size', '1']);
    expect(programs.stdout).toMatch(/^ID +NAME +CREATED\n\S+ +.+\nPage 1 of \d+ \(\d+ in all\)\n$/);
  });

  it('shows an empty list as such', async () => {
    const { programId } = await newTenant();
    const run = await herald(['api-keys', 'list', '--merchant', `none-${randomUUID()}`]);
    expect(run).toMatchObject({ code: 0, stdout: '(none)\n' });
    const targets = await herald(['targets', 'list', '--program', programId]);
    expect(targets.stdout).toBe('(none)\n');
  });

  it('runs through pnpm exec without printing the command line', async () => {
    const run = await spawnCli('pnpm', ['exec', 'herald', 'programs', 'list', '--password=hunter2-exec']);
    expect(run.code).toBe(2);
    expect(run.stdout + run.stderr).not.toContain('hunter2-exec');
  });
});

/** The headers GET /events requires, with a merchant key. */
function eventHeaders(key: string): Record<string, string> {
  return {
    'x-api-key': key,
    'content-type': 'application/json',
    'accept-language': 'en-US',
    origin: 'https://shop.example',
    'user-agent': 'herald-cli-test/1.0',
  };
}

describe('herald targets list, update, enable and disable', () => {
  it('changes the URL and filters, and switches the target off and on, without the password', async () => {
    const { programId, merchantId } = await newTenant();
    const password = `pw-${randomUUID()}`;
    await herald(
      ['targets', 'set', '--merchant', merchantId, '--url', 'https://shop.example/hooks', '--auth', 'basic', '--username', 'shop', '--password-stdin'],
      password,
    );

    const updated = await herald([
      'targets',
      'update',
      '--json',
      '--merchant',
      merchantId,
      '--url',
      'https://shop.example/v2',
      '--event-types',
      'created,updated',
    ]);
    expect(updated.code).toBe(0);
    expect(updated.json()).toMatchObject({
      url: 'https://shop.example/v2',
      auth: { mode: 'basic', username: 'shop', password: '********' },
      notifications: { eventTypes: ['created', 'updated'] },
    });
    const all = await herald(['targets', 'update', '--json', '--merchant', merchantId, '--event-types', 'all']);
    expect(all.json()).toMatchObject({ notifications: {} });
    const ordered = await herald(['targets', 'update', '--json', '--merchant', merchantId, '--ordering', 'object']);
    expect(ordered.json()).toMatchObject({ ordering: 'object', notifications: {} });

    const disabled = await herald(['targets', 'disable', '--merchant', merchantId]);
    expect(disabled.stdout).toMatch(/^enabled +false$/m);
    const listed = await herald(['targets', 'list', '--program', programId]);
    expect(listed.stdout).toMatch(new RegExp(`^\\S+ +merchant ${merchantId} +https://shop.example/v2 +basic +object +no +- +-$`, 'm'));
    const enabled = await herald(['targets', 'enable', '--json', '--merchant', merchantId]);
    expect(enabled.json()).toMatchObject({ enabled: true, disabledReason: null });
    for (const run of [updated, all, disabled, listed, enabled]) expect(run.stdout + run.stderr).not.toContain(password);
  });

  it("sets, changes and resets a target's delivery policy, and names the flag of a value out of range", async () => {
    const { merchantId } = await newTenant();
    const set = await herald([
      'targets',
      'set',
      '--json',
      '--merchant',
      merchantId,
      '--url',
      'https://shop.example/hooks',
      '--auth',
      'none',
      '--attempts',
      '5',
      '--timeout-ms',
      '2500',
      '--max-rate',
      '2.5',
    ]);
    expect(set.code).toBe(0);
    expect(set.json()).toMatchObject({
      delivery: { attempts: 5, timeoutMs: 2500, maxRatePerSecond: 2.5 },
      effectiveDelivery: { attempts: { value: 5, source: 'target' }, maxInFlight: { source: 'default' } },
    });
    const updated = await herald([
      'targets',
      'update',
      '--json',
      '--merchant',
      merchantId,
      '--attempts',
      'default',
      '--max-rate',
      'default',
      '--max-in-flight',
      '3',
      '--max-backoff-ms',
      '60000',
    ]);
    expect(updated.code).toBe(0);
    expect(updated.json().delivery).toEqual({ timeoutMs: 2500, maxInFlight: 3, maxBackoffMs: 60_000 });

    const refused = await herald(['targets', 'update', '--merchant', merchantId, '--max-in-flight', '1000']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^ {2}--max-in-flight: .*1 to 256/m);
  });

  it('names the flag of a refused update', async () => {
    const { merchantId } = await newTenant();
    await herald(['targets', 'set', '--merchant', merchantId, '--url', 'https://shop.example/hooks', '--auth', 'none']);
    const run = await herald(['targets', 'update', '--merchant', merchantId, '--url', 'ftp://shop.example/']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^ {2}--url: /m);
  });
});

describe('pnpm exec herald targets', () => {
  it('sets a merchant target with basic auth from a piped password, shows it masked, and deletes it', async () => {
    const { programId, merchantId } = await newTenant();
    const password = `pw-${randomUUID()}`;

    const set = await herald(
      [
        'targets',
        'set',
        '--json',
        '--merchant',
        merchantId,
        '--url',
        'https://shop.example/hooks',
        '--auth',
        'basic',
        '--username',
        'shop',
        '--password-stdin',
      ],
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

    const get = await herald(['targets', 'get', '--json', '--merchant', merchantId]);
    expect(get.code).toBe(0);
    // With the target's delivery health, as the workers keep it in Redis: nothing sent yet.
    expect(get.json()).toEqual({
      ...set.json(),
      health: {
        lastSuccessAt: null,
        failingSince: null,
        breaker: { state: 'closed', consecutiveFailures: 0, openedAt: null, halfOpenAt: null, probeInFlight: false },
        inFlight: 0,
        deferred: 0,
        pausedUntil: null,
        window: null,
      },
    });

    const deleted = await herald(['targets', 'delete', '--json', '--merchant', merchantId]);
    expect(deleted.code).toBe(0);
    expect(deleted.json()).toEqual({ deleted: true, merchantId });

    const gone = await herald(['targets', 'get', '--json', '--merchant', merchantId]);
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
        'targets',
        'set',
        '--json',
        '--program',
        programId,
        '--url',
        'https://shop.example/hooks',
        '--auth',
        'oauth',
        '--auth-url',
        'https://shop.example/token',
        '--username',
        'client',
        '--password-stdin',
        '--no-verify',
        '--token-request',
        'form',
        '--scope',
        'callbacks',
        '--object-types',
        'payment, refund',
        '--event-types',
        'created,status.updated',
        '--ordering',
        'object',
        '--disabled',
      ],
      'pass word with spaces\r\n',
    );
    expect(set.code).toBe(0);
    expect(set.json()).toMatchObject({
      ordering: 'object',
      auth: { mode: 'oauth', authUrl: 'https://shop.example/token', username: 'client', password: '********', tokenRequest: 'form', scope: 'callbacks' },
      notifications: { objectTypes: ['payment', 'refund'], eventTypes: ['created', 'status.updated'] },
      enabled: false,
    });
  });

  it('sets an OAuth target whose token request sends the credentials in the body (client_secret_post)', async () => {
    const { merchantId } = await newTenant();
    const set = await herald(
      [
        'targets',
        'set',
        '--json',
        '--merchant',
        merchantId,
        '--url',
        'https://shop.example/hooks',
        '--auth',
        'oauth',
        '--auth-url',
        'https://shop.example/token',
        '--username',
        'shop client',
        '--password-stdin',
        '--no-verify',
        '--token-request',
        'client_secret_post',
      ],
      's3cr+t%zz\n',
    );
    expect(set.code).toBe(0);
    expect(set.json()).toMatchObject({ auth: { mode: 'oauth', username: 'shop client', tokenRequest: 'client_secret_post' } });
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
      const delivered = await herald(['targets', 'test', '--json', '--program', programId]);
      expect(delivered.code).toBe(0);
      expect(delivered.json()).toMatchObject({ delivered: true, statusCode: 200, responseBody: 'ok' });

      const refused = `http://127.0.0.1:${await closedPort()}/hook`;
      expect((await herald(['targets', 'set', '--merchant', merchantId, '--url', refused, '--auth', 'none'])).code).toBe(0);
      const failed = await herald(['targets', 'test', '--json', '--merchant', merchantId]);
      expect(failed.code).toBe(1);
      expect(failed.json()).toMatchObject({ delivered: false, errorKind: 'connection' });
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it('shows refused OAuth credentials with the error code whole and suggests its own --no-verify', async () => {
    const { merchantId } = await newTenant();
    const tokens = await startHttpRecorder(always({ status: 401, body: { error: 'invalid_client' } }));
    try {
      const run = await herald(
        [
          'targets',
          'set',
          '--merchant',
          merchantId,
          '--url',
          'https://shop.example/hooks',
          '--auth',
          'oauth',
          '--username',
          'shop',
          '--password-stdin',
          '--auth-url',
          `${tokens.origin}/token`,
        ],
        'client-secret-7d1e',
      );
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('the token endpoint answered HTTP 401: invalid_client');
      expect(run.stderr).toContain('or save with --no-verify to skip the check.');
      expect(run.stderr).not.toContain('verify=false');
      expect(run.stderr).not.toContain('[REDACTED]');
    } finally {
      await tokens.close();
    }
  });

  it('prints the problem of a refused request on stderr and exits 1', async () => {
    const { merchantId } = await newTenant();
    const args = ['targets', 'set', '--merchant', merchantId, '--url', 'https://shop.example/', '--auth', 'none', '--object-types', 'subscription'];
    const json = await herald([...args, '--json']);
    expect(json.code).toBe(1);
    expect(json.stdout).toBe('');
    expect(JSON.parse(json.stderr)).toMatchObject({ status: 400, errors: [{ pointer: '/notifications/objectTypes/0' }] });
    const human = await herald(args);
    expect(human.code).toBe(1);
    expect(human.stderr).toMatch(/^herald: the API answered 400 /);
    // The flag that set the field, not the API's pointer.
    expect(human.stderr).toMatch(/\n {2}--object-types: .*payment/);
  });

  it('asks for the password at a terminal prompt that does not echo it', async () => {
    const { programId } = await newTenant();
    const password = `typed-${randomUUID()}`;
    // `script` runs the CLI on a pseudo-terminal, as a person at a terminal would.
    const command = `${HERALD} targets set --json --program ${programId} --url https://shop.example/hooks --auth basic --username shop --password-stdin`;
    const terminal = startCommand('script', ['-qfec', command, '/dev/null'], { HERALD_API_URL: apiUrl, ADMIN_TOKEN }, { stdin: true });
    // Typed when the prompt shows, as a person would.
    terminal.child.stdout!.on('data', () => {
      if (terminal.stdout().endsWith('Password: ')) terminal.child.stdin!.write(`${password}\r`);
    });
    const code = await terminal.exited(30_000);
    const output = terminal.stdout();
    expect(code).toBe(0);
    expect(output).toMatch(/^Password: \r?\n/);
    expect(output).toContain('"password": "********"');
    expect(output).not.toContain(password);
  });

  it('refuses a password on the command line without echoing it', async () => {
    for (const args of [['--password', 'hunter2-cli'], ['--password=hunter2-cli']]) {
      const refused = await herald(['targets', 'set', '--program', 'p1', '--url', 'https://shop.example/', '--auth', 'basic', '--username', 'u', ...args]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/--password-stdin/);
      expect(refused.stdout + refused.stderr).not.toContain('hunter2-cli');
    }
    const token = await herald(['programs', 'list', '--token=hunter2-cli']);
    expect(token.code).toBe(2);
    expect(token.stderr).toMatch(/--token is not accepted on the command line/);
    expect(token.stdout + token.stderr).not.toContain('hunter2-cli');
  });

  it.each([
    [['targets', 'get'], /exactly one of --program <id> and --merchant <id>/],
    [['targets', 'get', '--program', 'a', '--merchant', 'b'], /exactly one of/],
    [['targets', 'lsit', '--program', 'a'], /expected "targets list", "targets show", .*got "targets lsit"/],
    [
      ['targets', 'signing-secret', '--program', 'a'],
      /expected "targets signing-secret show" or "targets signing-secret rotate", got "targets signing-secret "/,
    ],
    [['targets', 'get', '--program', 'a', '--show-secret'], /--show-secret only goes with "targets signing-secret rotate"/],
    [['targets', 'set', '--program', 'a', '--auth', 'none'], /--url is required/],
    [['targets', 'set', '--program', 'a', '--url', 'https://x.example/'], /--auth none, --auth basic or --auth oauth is required/],
    [['targets', 'set', '--program', 'a', '--url', 'https://x.example/', '--auth', 'basic', '--username', 'u'], /--auth basic needs --password-stdin/],
    [['targets', 'set', '--program', 'a', '--url', 'https://x.example/', '--auth', 'none', '--username', 'u'], /--username does not go with --auth none/],
    [['targets', 'get', '--program', 'a', '--url', 'https://x.example/'], /--url cannot be used with "targets get"/],
    [['targets', 'update', '--program', 'a'], /"targets update" needs at least one of --url/],
    [['targets', 'enable', '--program', 'a', '--url', 'https://x.example/'], /--url cannot be used with "targets enable"/],
    [['targets', 'list', '--program', 'a', '--disabled'], /--disabled cannot be used with "targets list"/],
    [['programs', 'create'], /--name is required/],
    [['merchants', 'create', '--name', 'x'], /needs --program <id> and --name <name>/],
    [['api-keys', 'create'], /exactly one of --program <id> and --merchant <id>/],
    [['api-keys', 'revoke'], /"api-keys revoke" needs one key id/],
    [['targets', 'test', '--program', 'a', '--no-verify'], /--no-verify cannot be used with "targets test"/],
    [['targets', 'set', '--program', 'a', '--url', 'https://x.example/', '--auth', 'none', '--scope', 's'], /--scope does not go with --auth none/],
    [['targets', 'get', '--program', 'a', '--colour=red'], /: Unknown option '--colour'\.\n/],
  ])('explains a wrong command line %j and exits 2', async (args, message) => {
    const run = await herald(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toMatch(/herald --help/);
  });

  it('prints the signing secret only when asked by name: signing-secret show, or rotate --show-secret', async () => {
    const { merchantId } = await newTenant();
    await call('PUT', `/admin/merchants/${merchantId}/notification-target`, ADMIN_TOKEN, { url: 'https://shop.example/hooks', auth: { mode: 'none' } }, 200);

    const shown = await herald(['targets', 'signing-secret', 'show', '--json', '--merchant', merchantId]);
    expect(shown).toMatchObject({ code: 0, stderr: '' });
    const first = shown.json().secret as string;
    expect(first).toMatch(/^whsec_/);

    const rotated = await herald(['targets', 'signing-secret', 'rotate', '--json', '--merchant', merchantId]);
    expect(rotated.code).toBe(0);
    expect(rotated.json()).toMatchObject({ rotated: true, secret: expect.stringMatching(/^hidden: /), previousSecretExpiresAt: expect.any(String) });
    const second = (await herald(['targets', 'signing-secret', 'show', '--json', '--merchant', merchantId])).json().secret as string;
    expect(second).not.toBe(first);
    expect(rotated.stdout).not.toContain(second);

    const third = await herald(['targets', 'signing-secret', 'rotate', '--json', '--merchant', merchantId, '--show-secret']);
    expect(third.json().secret).toMatch(/^whsec_/);
    expect(third.json().secret).not.toBe(second);
    for (const secret of [first, second]) expect(service.output()).not.toContain(secret.slice('whsec_'.length));
  });

  it.each([[['--help']], [['help']]])('prints its usage with %j', async (args) => {
    const run = await herald(args);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage:\n {2}herald programs create/);
    for (const command of ['merchants list', 'api-keys revoke', 'targets get', 'targets update', 'targets disable', 'deliveries replay']) {
      expect(run.stdout).toContain(`\n  herald ${command} `);
    }
  });
});

describe('pnpm exec herald deliveries', () => {
  /** A merchant with a target and one payment event: one delivery, its job waiting (no worker runs here). */
  async function oneDelivery(): Promise<{ merchantId: string; eventId: string; deliveryId: string }> {
    const { programId, merchantId } = await newTenant();
    await call('PUT', `/admin/merchants/${merchantId}/notification-target`, ADMIN_TOKEN, { url: 'https://shop.example/hooks', auth: { mode: 'none' } }, 200);
    const eventId = `Event-${randomUUID()}`;
    await call(
      'POST',
      '/internal/events',
      INGEST_TOKEN,
      { id: eventId, programId, merchantId, origin: 'api', eventType: 'created', objectId: 'pay-1', objectType: 'payment' },
      201,
    );
    const list = await herald(['deliveries', 'list', '--json', '--merchant', merchantId]);
    expect(list.code).toBe(0);
    const page = list.json() as { count: number; data: Array<{ id: string; eventId: string }> };
    expect(page).toMatchObject({ page: 1, count: 1, data: [{ eventId }] });
    return { merchantId, eventId, deliveryId: page.data[0]!.id };
  }

  it('lists, shows and replays deliveries over the admin API', async () => {
    const { merchantId, eventId, deliveryId } = await oneDelivery();

    const shown = await herald(['deliveries', 'show', deliveryId, '--json']);
    expect(shown.code).toBe(0);
    expect(shown.json()).toMatchObject({ id: deliveryId, eventId, status: 'pending', attempts: [] });

    const ofEvent = await herald(['deliveries', 'show', '--event', eventId, '--json']);
    expect(ofEvent.json()).toMatchObject({ eventId, data: [{ id: deliveryId }] });

    const one = await herald(['deliveries', 'replay', deliveryId, '--json']);
    expect(one.code).toBe(0);
    expect(one.json()).toMatchObject({ deliveries: [{ id: deliveryId, status: 'pending', job: 'already-queued' }], more: false });

    const bulk = await herald(['deliveries', 'replay', '--json', '--merchant', merchantId, '--status', 'pending', '--limit', '5']);
    expect(bulk.code).toBe(0);
    expect(bulk.json()).toMatchObject({ deliveries: [{ id: deliveryId }], more: false });

    const paged = await herald(['deliveries', 'list', '--json', '--merchant', merchantId, '--page', '2', '--page-size', '1']);
    expect(paged.json()).toMatchObject({ page: 2, pageSize: 1, count: 1, data: [] });
  });

  it("speaks of its own flags in the API's refusals, once each, with no line for the request as a whole", async () => {
    const unbounded = await herald(['deliveries', 'replay', '--status', 'failed']);
    expect(unbounded.code).toBe(1);
    expect(unbounded.stderr).toBe(
      'herald: the API answered 400 Invalid request body\n' +
        '  must name --program, --merchant, --event or --target, or both --created-from and --created-to at most 31 days apart, so that a replay never takes every delivery\n',
    );
    const page = await herald(['deliveries', 'list', '--page-size', '0']);
    expect(page.code).toBe(1);
    expect(page.stderr).toBe('herald: the API answered 400 Invalid query parameter\n  --page-size: must be a whole number from 1 to 100; got 0\n');
    const halfRange = await herald(['deliveries', 'replay', '--created-from', '2026-01-01T00:00:00Z']);
    expect(halfRange.stderr).toContain('\n  --created-to is required with --created-from when no --program, --merchant, --event, --target is given\n');
  });

  it('prints the problem of a refused request on stderr and exits 1', async () => {
    const unbounded = await herald(['deliveries', 'replay', '--json', '--status', 'failed']);
    expect(unbounded.code).toBe(1);
    expect(JSON.parse(unbounded.stderr)).toMatchObject({ status: 400 });
    const missing = await herald(['deliveries', 'show', randomUUID(), '--json']);
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
    [['delivery', 'list'], /expected one of "programs …", .*"deliveries …", got "delivery"/],
    [[], /^Usage:\n {2}herald programs create/],
  ])('explains a wrong command line %j and exits 2', async (args, message) => {
    const run = await herald(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
  });
});
