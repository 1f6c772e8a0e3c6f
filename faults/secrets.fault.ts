import { lastRead, startHttpRecorder, useMigratedDatabase, waitFor, type HttpRecorder } from '@herald/testing';
import { Client } from 'pg';
import { Webhook } from 'standardwebhooks';
import { dumpRedisKeys } from './support/redis-dump';
import { report } from './support/report';
import { keptFiles, recordedSecrets, recordSecret, type SecretKind } from './support/run-dir';
import { newEvents, System } from './support/system';

// Scenario 8, run last (faults/support/sequencer.cjs): first traffic of its own through a real
// events-api and delivery-worker (debug logs) with every kind of credential: a Basic-auth program
// target whose merchant answers 401 echoing the Authorization header in every other answer, an
// OAuth merchant target whose token endpoint fails once and whose first token the target
// rejects, a merchant API key, the admin, ingest and dashboard credentials, and both targets'
// signing secrets (the merchant target's rotated, so that its callbacks carry two signatures). Then everything the
// whole run produced is searched for every credential any scenario used: the logs of every
// service process and in-process service of every scenario, every Redis key of every queue (job
// data, return values, failure reasons, stack traces, events, the OAuth token cache), the API
// answers every scenario received, and this scenario's GET /events, admin target views, delivery
// and attempt history, and the dashboard's JSON. The OAuth token cache in Redis is searched too:
// it keeps access tokens encrypted. So is PostgreSQL itself: every row of every table of this
// scenario's database, where the merchant's echoed Authorization headers were stored.

const EVENTS = 60;
const BASIC_PASSWORD = 'faults-basic-P4ssw0rd-9f8e7d';
const CLIENT_SECRET = 'faults-secrets-client-secret-41b7';
const TOKENS = { rejected: 'faults-secrets-token-rejected-8c2a', good: 'faults-secrets-token-good-d91f' };
const DASHBOARD = { username: 'ops', password: 'faults-dashboard-password-6e0c' };
const base64 = (text: string): string => Buffer.from(text).toString('base64');
/** Part of the Redis key of a cached OAuth token (packages/callback-auth token-cache.ts). */
const TOKEN_CACHE_KEY = ':callback-auth:token:';

const database = useMigratedDatabase('herald_faults_secrets');

let system: System | undefined;
const receivers: HttpRecorder[] = [];
afterEach(async () => {
  await system?.close();
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
  system = undefined;
});

async function receiver(...args: Parameters<typeof startHttpRecorder>): Promise<HttpRecorder> {
  const started = await startHttpRecorder(...args);
  receivers.push(started);
  return started;
}

it('leaves no credential of the whole run in any log, Redis key, API answer, dashboard view or database row', async () => {
  const own: Array<{ kind: SecretKind; value: string }> = [
    { kind: 'basic password', value: BASIC_PASSWORD },
    { kind: 'basic password', value: base64(`shop:${BASIC_PASSWORD}`) },
    { kind: 'oauth client secret', value: CLIENT_SECRET },
    { kind: 'oauth client secret', value: base64(`client:${CLIENT_SECRET}`) },
    { kind: 'oauth access token', value: TOKENS.rejected },
    { kind: 'oauth access token', value: TOKENS.good },
    { kind: 'dashboard password', value: DASHBOARD.password },
    { kind: 'dashboard password', value: base64(`${DASHBOARD.username}:${DASHBOARD.password}`) },
  ];
  for (const { kind, value } of own) recordSecret(kind, value);

  // Every other answer of the Basic merchant is a 401 that echoes the Authorization header back.
  const basicMerchant = await receiver((request, index) =>
    index % 2 === 0 ? { status: 401, body: { error: 'unauthorized', youSent: request.headers.authorization } } : { status: 200 },
  );
  const tokenEndpoint = await receiver((_request, index) =>
    index === 0
      ? { status: 500, body: { error: 'server_error' } }
      : { status: 200, body: { access_token: index === 1 ? TOKENS.rejected : TOKENS.good, expires_in: 3600, token_type: 'Bearer' } },
  );
  const oauthMerchant = await receiver((request) => (request.headers.authorization === `Bearer ${TOKENS.good}` ? { status: 200 } : { status: 401 }));

  system = new System('8-secrets', database.url, 'redis://127.0.0.1:6379', {
    LOG_LEVEL: 'debug',
    DELIVERY_ATTEMPTS: '10',
    DELIVERY_BACKOFF_MS: '50',
    DASHBOARD_USERNAME: DASHBOARD.username,
    DASHBOARD_PASSWORD: DASHBOARD.password,
  });
  await system.startApi();
  await system.startWorker();
  const tenant = await system.createTenant(`${basicMerchant.origin}/hook`);
  const basicTarget = await system.admin('PUT', `/programs/${tenant.programId}/notification-target`, {
    url: `${basicMerchant.origin}/hook`,
    auth: { mode: 'basic', username: 'shop', password: BASIC_PASSWORD },
  });
  // ?verify=false: the token endpoint's answers are scripted for the worker (a 500 first, then a token the merchant refuses).
  const oauthTarget = await system.admin('PUT', `/merchants/${tenant.merchantId}/notification-target?verify=false`, {
    url: `${oauthMerchant.origin}/hook`,
    auth: { mode: 'oauth', authUrl: `${tokenEndpoint.origin}/token`, username: 'client', password: CLIENT_SECRET },
  });
  expect([basicTarget.status, oauthTarget.status]).toEqual([200, 200]);
  // Read through the endpoints that show them by design (their answers are not kept for the search).
  const secretOf = async (answer: Promise<{ body: string }>): Promise<string> => (JSON.parse((await answer).body) as { secret: string }).secret;
  const signingSecrets = [
    await secretOf(system.admin('GET', `/programs/${tenant.programId}/notification-target/signing-secret`)),
    await secretOf(system.admin('GET', `/merchants/${tenant.merchantId}/notification-target/signing-secret`)),
    await secretOf(system.admin('POST', `/merchants/${tenant.merchantId}/notification-target/signing-secret/rotate`)),
  ];
  for (const secret of signingSecrets) {
    recordSecret('signing secret', secret);
    recordSecret('signing secret', secret.slice('whsec_'.length));
  }
  const events = newEvents(tenant, EVENTS, 'secrets');
  expect((await system.ingest(events)).status).toBe(201);

  // Wait for every delivery (program and merchant target, 2 per event) to settle, through the API.
  const pending = async (): Promise<number> =>
    (JSON.parse((await system!.admin('GET', `/deliveries?programId=${tenant.programId}&status=pending&pageSize=1`)).body) as { count: number }).count;
  // Goes on after the time is up: the searches below run on whatever the system holds then.
  await waitFor(pending, (count) => count === 0, 60_000, 'every delivery to settle', 250).catch(lastRead);

  // The API's views: this scenario's answers are kept by the System and searched below.
  const views: string[] = [];
  const keep = async (answer: Promise<{ status: number; body: string }>): Promise<unknown> => {
    const { status, body } = await answer;
    expect(status).toBe(200);
    views.push(body);
    return JSON.parse(body) as unknown;
  };
  for (let page = 1, pages = 1; page <= pages; page++) {
    pages = ((await keep(system.listEvents(tenant.key, `?page=${page}&pageSize=100`))) as { totalPages: number }).totalPages;
  }
  await keep(system.admin('GET', `/programs/${tenant.programId}/notification-target`));
  await keep(system.admin('GET', `/merchants/${tenant.merchantId}/notification-target`));
  const deliveries: Array<{ id: string; status: string }> = [];
  for (let page = 1, pages = 1; page <= pages; page++) {
    const listed = (await keep(system.admin('GET', `/deliveries?programId=${tenant.programId}&page=${page}&pageSize=100`))) as {
      totalPages: number;
      data: Array<{ id: string; status: string }>;
    };
    pages = listed.totalPages;
    deliveries.push(...listed.data);
  }
  for (const delivery of deliveries) await keep(system.admin('GET', `/deliveries/${delivery.id}`));
  for (const event of events.slice(0, 10)) await keep(system.admin('GET', `/events/${String(event.id)}/deliveries`));
  // The dashboard's JSON: every job list, some jobs one by one, the workers and Redis stats.
  const dashboard = (path: string) =>
    system!.request('GET', `/admin/queues/api${path}`, { authorization: `Basic ${base64(`${DASHBOARD.username}:${DASHBOARD.password}`)}` });
  const dashboardViews: string[] = [];
  const keepDashboard = async (path: string): Promise<unknown> => {
    const answer = await dashboard(path);
    expect(answer.status).toBe(200);
    dashboardViews.push(answer.body);
    return JSON.parse(answer.body) as unknown;
  };
  for (const status of ['latest', 'active', 'waiting', 'prioritized', 'delayed', 'completed', 'failed']) {
    await keepDashboard(`/queues?activeQueue=deliveries&status=${status}&page=1&jobsPerPage=100`);
  }
  for (const delivery of deliveries.slice(0, 20)) await keepDashboard(`/queues/deliveries/${delivery.id}`);
  await keepDashboard('/queues/deliveries/workers');
  await keepDashboard('/redis/stats');
  const ownRedis = await dumpRedisKeys(system.redisUrl, `${system.keyPrefix}:*`);
  const postgres = await dumpDatabase(database.url);

  // What the whole run left (this scenario's own logs and Redis keys are read live: the System
  // keeps them in the run directory only when it closes).
  const places = new Map<string, string>();
  for (const dir of ['logs', 'responses'] as const) for (const file of keptFiles(dir)) places.set(`${dir}/${file.name}`, file.text);
  system.services.forEach((service, i) => {
    places.set(`logs/8-secrets-live-${service === system!.api ? 'events-api' : 'delivery-worker'}-${i}`, service.output());
  });
  const addRedis = (name: string, lines: string[]): void => void places.set(`redis/${name}`, lines.join('\n'));
  for (const file of keptFiles('redis')) addRedis(file.name, file.text.split('\n'));
  addRedis('8-secrets-live', ownRedis);
  places.set('responses/8-secrets-api-views', views.join('\n'));
  places.set('responses/8-secrets-dashboard-json', dashboardViews.join('\n'));
  for (const [table, rows] of postgres) places.set(`postgres/8-secrets-${table}`, rows.join('\n'));
  // The merchant's echoes really were stored (redacted), or the search of PostgreSQL proves nothing.
  const echoesStored = (postgres.get('delivery_attempts') ?? []).filter((row) => row.includes('youSent') && row.includes('[REDACTED]')).length;

  const needles = new Map<string, SecretKind>();
  for (const { kind, value } of recordedSecrets()) needles.set(value, kind);
  const found: string[] = [];
  for (const [place, text] of places) {
    for (const [needle, kind] of needles) {
      if (text.includes(needle)) found.push(`${kind} in ${place}`);
    }
  }
  // The control: the same search over what the merchants received finds their credentials.
  const control = JSON.stringify([basicMerchant.requests, tokenEndpoint.requests, oauthMerchant.requests].flat().map((r) => r.headers));
  const foundInControl = [...needles].filter(([needle]) => control.includes(needle)).map(([, kind]) => kind);
  const scenariosCovered = [...new Set([...places.keys()].map((place) => /^\w+\/(\d)/.exec(place)?.[1]).filter(Boolean))].sort();
  const bytes = (prefix: string): number => [...places].filter(([place]) => place.startsWith(prefix)).reduce((n, [, text]) => n + Buffer.byteLength(text), 0);
  const finalStatus = JSON.parse((await system.admin('GET', `/deliveries?programId=${tenant.programId}&status=succeeded&pageSize=1`)).body) as {
    count: number;
  };

  const tokenCacheEntries = [...places.values()].reduce((n, text) => n + text.split('\n').filter((line) => line.includes(TOKEN_CACHE_KEY)).length, 0);
  report(
    '8. secrets',
    `${EVENTS} events to a Basic-auth program target (every other answer a 401 echoing the Authorization header) and an OAuth merchant target (token endpoint 500 once, first token rejected); then every log, Redis key and API answer of the whole run, and this scenario's GET /events, target views, delivery and attempt history, dashboard JSON and every row of its database, searched for every credential of the run`,
    {
      'deliveries delivered': `${finalStatus.count} of ${EVENTS * 2}`,
      'requests carrying the Basic credential to the merchant': basicMerchant.requests.filter(
        (r) => r.headers.authorization === `Basic ${base64(`shop:${BASIC_PASSWORD}`)}`,
      ).length,
      'token requests carrying the client secret': tokenEndpoint.requests.filter(
        (r) => r.headers.authorization === `Basic ${base64(`client:${CLIENT_SECRET}`)}` || r.body.includes(CLIENT_SECRET),
      ).length,
      'callbacks carrying the good token': oauthMerchant.requests.filter((r) => r.headers.authorization === `Bearer ${TOKENS.good}`).length,
      'callbacks carrying two signatures (rotated secret)': oauthMerchant.requests.filter((r) => String(r.headers['webhook-signature']).split(' ').length === 2)
        .length,
      'credentials searched for': Object.fromEntries(
        [...new Set(needles.values())].map((kind) => [kind, [...needles.values()].filter((k) => k === kind).length]),
      ),
      'scenarios whose output was searched': scenariosCovered.join(', '),
      'places searched': {
        logs: [...places.keys()].filter((p) => p.startsWith('logs/')).length,
        'redis dumps': [...places.keys()].filter((p) => p.startsWith('redis/')).length,
        'answer files': [...places.keys()].filter((p) => p.startsWith('responses/')).length,
        'postgres tables': postgres.size,
      },
      'postgres rows searched': [...postgres.values()].reduce((n, rows) => n + rows.length, 0),
      'stored attempts holding a redacted echo of the Authorization header': echoesStored,
      'MB searched': {
        logs: (bytes('logs/') / 1e6).toFixed(1),
        redis: (bytes('redis/') / 1e6).toFixed(1),
        'API answers and dashboard JSON': (bytes('responses/') / 1e6).toFixed(1),
        postgres: (bytes('postgres/') / 1e6).toFixed(1),
      },
      'OAuth token cache entries searched (encrypted)': tokenCacheEntries,
      'credentials found': found.length ? found.slice(0, 20) : 'none',
    },
  );
  // The credentials must really have been used, or the search proves nothing.
  expect(finalStatus.count).toBe(EVENTS * 2);
  expect(basicMerchant.requests.some((r) => r.headers.authorization === `Basic ${base64(`shop:${BASIC_PASSWORD}`)}`)).toBe(true);
  expect(oauthMerchant.requests.some((r) => r.headers.authorization === `Bearer ${TOKENS.rejected}`)).toBe(true);
  expect(new Set(foundInControl)).toEqual(new Set(['basic password', 'oauth client secret', 'oauth access token']));
  expect(tokenCacheEntries).toBeGreaterThan(0);
  expect(echoesStored).toBeGreaterThan(0);
  // The signing secrets were really used: every callback verifies with its target's secret.
  const verifies = (secret: string, r: { body: string; headers: object }) => Boolean(new Webhook(secret).verify(r.body, r.headers as Record<string, string>));
  expect(basicMerchant.requests.every((r) => verifies(signingSecrets[0]!, r))).toBe(true);
  expect(oauthMerchant.requests.every((r) => verifies(signingSecrets[1]!, r) && verifies(signingSecrets[2]!, r))).toBe(true);
  expect(found).toEqual([]);
});

/**
 * Every row of every table of the database's public schema, each as its JSON text, by table.
 * Reading rows through SQL (not pg_dump) needs no client binary of the server's version.
 */
async function dumpDatabase(url: string): Promise<Map<string, string[]>> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const tables = await client.query<{ name: string }>(
      "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name",
    );
    const dump = new Map<string, string[]>();
    for (const { name } of tables.rows) {
      const rows = await client.query<{ row: string }>(`SELECT row_to_json(t)::text AS row FROM "${name.replaceAll('"', '""')}" t`);
      dump.set(
        name,
        rows.rows.map((r) => r.row),
      );
    }
    return dump;
  } finally {
    await client.end();
  }
}
