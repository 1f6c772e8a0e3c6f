import { createFailedAuthThrottle } from '@herald/lifecycle';
import { createRedisConnection, pingRedis } from '@herald/queue';
import { always, closedPort, metricValue } from '@herald/testing';
import { startMonitoringServer, type MonitoringServer } from '../src/monitoring-server';
import { issueTokens } from './support/tokens';
import { useHttpRecorders, useWorlds, type World } from './support/world';

const world = useWorlds();
const receiver = useHttpRecorders();

const servers: MonitoringServer[] = [];
const closers: Array<() => void> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
  for (const close of closers.splice(0)) close();
});

/** The worker's listener on a free port, checking `w`'s PostgreSQL and a Redis at `redisUrl`. */
async function monitor(w: World, redisUrl = w.config.redisUrl, token?: string): Promise<string> {
  const redis = createRedisConnection(redisUrl, { role: 'client' });
  redis.on('error', () => undefined);
  closers.push(() => redis.disconnect());
  const server = await startMonitoringServer({
    port: 0,
    host: '127.0.0.1',
    metrics: w.metrics,
    checks: [
      { name: 'postgres', check: () => w.prisma.$queryRaw`SELECT 1` },
      { name: 'redis', check: () => pingRedis(redis) },
    ],
    readinessTimeoutMs: 1_500,
    token,
    failedAuth: createFailedAuthThrottle(w.config.authFailures),
  });
  servers.push(server);
  return `http://127.0.0.1:${server.port}`;
}

const scrape = async (base: string): Promise<string> => {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
};

describe("the delivery-worker's monitoring listener", () => {
  it('answers /healthz with 200 while the process runs', async () => {
    const base = await monitor(world());
    const res = await fetch(`${base}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('answers /readyz with 200 when PostgreSQL and Redis answer', async () => {
    const base = await monitor(world());
    const res = await fetch(`${base}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ready', checks: { postgres: { status: 'up' }, redis: { status: 'up' } } });
  });

  it('answers /readyz with 503 problem+json naming Redis when Redis does not answer', async () => {
    const base = await monitor(world(), `redis://127.0.0.1:${await closedPort()}`);
    const res = await fetch(`${base}/readyz`);
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await res.json()).toMatchObject({
      type: '/problems/not_ready',
      status: 503,
      down: ['redis'],
      checks: { postgres: { status: 'up' }, redis: { status: 'down' } },
    });
  });

  it('answers an unknown path with 404 problem+json', async () => {
    const res = await fetch(`${await monitor(world())}/nope`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ type: '/problems/not_found', status: 404 });
  });

  it('counts a delivered callback in /metrics, with its attempt duration and the queue depth', async () => {
    const w = world();
    const base = await monitor(w);
    const merchant = await receiver(always({ status: 200 }));
    const { programId } = await w.createTarget(`${merchant.origin}/hook`);
    const before = await scrape(base);
    expect(metricValue(before, 'herald_deliveries_total', { outcome: 'delivered', service: 'delivery-worker' })).toBe(0);

    w.startWorker();
    const [sent] = await w.sendEvents(programId);
    await w.settled([sent!.deliveryId]);

    const after = await scrape(base);
    expect(metricValue(after, 'herald_deliveries_total', { outcome: 'delivered' })).toBe(1);
    expect(metricValue(after, 'herald_deliveries_total', { outcome: 'attempt_failed' })).toBe(0);
    expect(metricValue(after, 'herald_delivery_attempt_duration_seconds_count')).toBe(1);
    expect(metricValue(after, 'herald_delivery_attempt_duration_seconds_sum')).toBeGreaterThan(0);
    // Not watched here: the worker process reports its queue through the sweeper's producer.
    expect(metricValue(after, 'herald_queue_jobs', { state: 'waiting' })).toBeUndefined();
  });

  it('counts failed attempts apart from the last one, which fails the delivery', async () => {
    const w = world({ DELIVERY_ATTEMPTS: '2' });
    const base = await monitor(w);
    const merchant = await receiver(always({ status: 500 }));
    const { programId } = await w.createTarget(`${merchant.origin}/hook`);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);
    await w.settled([sent!.deliveryId], ['failed']);

    const text = await scrape(base);
    expect(metricValue(text, 'herald_deliveries_total', { outcome: 'attempt_failed' })).toBe(1);
    expect(metricValue(text, 'herald_deliveries_total', { outcome: 'failed' })).toBe(1);
    expect(metricValue(text, 'herald_deliveries_total', { outcome: 'delivered' })).toBe(0);
  });

  it('counts one OAuth token request for two callbacks that share the token', async () => {
    const w = world();
    const base = await monitor(w);
    const merchant = await receiver(always({ status: 200 }));
    const tokens = await receiver(issueTokens());
    const auth = { mode: 'oauth' as const, authUrl: `${tokens.origin}/oauth/token`, username: 'client-1', password: 'oauth-password-1' };
    const { programId } = await w.createTarget(`${merchant.origin}/hook`, auth);
    w.startWorker();
    const sent = await w.sendEvents(programId, 2);
    await w.settled(sent.map((s) => s.deliveryId));

    expect(tokens.requests).toHaveLength(1);
    expect(metricValue(await scrape(base), 'herald_oauth_token_requests_total', { outcome: 'issued' })).toBe(1);
  });

  it('refuses /metrics without the METRICS_TOKEN bearer when one is set, and serves it with it', async () => {
    const base = await monitor(world(), undefined, 'metrics-token-0123456789');
    const refused = await fetch(`${base}/metrics`);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="herald-metrics"');
    const served = await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer metrics-token-0123456789' } });
    expect(served.status).toBe(200);
    expect(await served.text()).toContain('herald_deliveries_total');
  });
});
