import { always, callbacksPerEvent, getFrom, startService, uniqueId, useMigratedDatabase, waitFor, type ServiceProcess } from '@herald/testing';
import { useHttpRecorders, useWorlds, type World } from './support/world';

// Real worker processes, on a database of their own: a worker's sweeper enqueues every forgotten
// delivery it finds, and must not find the other test files' deliveries.
const database = useMigratedDatabase('herald_worker_process');

const world = useWorlds();
const startReceiver = useHttpRecorders();
let services: ServiceProcess[] = [];
afterEach(async () => {
  await Promise.all(services.map((service) => service.stop('SIGKILL')));
  services = [];
});

function startWorker(env: Record<string, string>): ServiceProcess {
  const service = startService('services/delivery-worker/src/main.ts', {
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    DATABASE_URL: database.url,
    METRICS_PORT: '0',
    ...env,
  });
  services.push(service);
  return service;
}

/** The environment of worker processes serving `w`'s queue. */
function workerEnv(w: World, env: Record<string, string> = {}): Record<string, string> {
  return { QUEUE_PREFIX: w.config.queuePrefix, DELIVERY_BACKOFF_MS: '10', WORKER_CONCURRENCY: '8', ...env };
}

describe('the delivery-worker process', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('connects to PostgreSQL and Redis, then exits 0 on %s', async (signal) => {
    const service = startWorker({ QUEUE_PREFIX: uniqueId('test') });
    await service.waitForLog('delivery-worker ready');
    expect(await service.stop(signal)).toBe(0);
    expect(service.output()).toContain('"message":"stopped"');
  });

  it('serves /healthz and /metrics on the free port METRICS_PORT=0 chose, and logs that port', async () => {
    const service = startWorker({ QUEUE_PREFIX: uniqueId('test') });
    const { port } = await service.waitForLog('metrics listening');
    await service.waitForLog('delivery-worker ready');
    expect(port).toEqual(expect.any(Number));
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    expect(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()).toContain('service="delivery-worker"');
    expect(await service.stop('SIGTERM')).toBe(0);
  });

  it('throttles wrong METRICS_TOKEN tries per address (AUTH_FAILURES_PER_ADDRESS): 429 with Retry-After to that address, the token served to another', async () => {
    const token = 'worker-metrics-token-0123456789';
    const service = startWorker({ QUEUE_PREFIX: uniqueId('test'), METRICS_TOKEN: token, AUTH_FAILURES_PER_ADDRESS: '3', AUTH_FAILURE_WINDOW_SECONDS: '600' });
    const { port } = await service.waitForLog('metrics listening');
    const metrics = `http://127.0.0.1:${String(port)}/metrics`;
    for (let i = 0; i < 3; i++) expect((await getFrom(metrics, '127.8.0.1', { authorization: `Bearer wrong-token-${i}-0123456789` })).status).toBe(401);
    const refused = await getFrom(metrics, '127.8.0.1', { authorization: `Bearer ${token}` });
    expect(refused.status).toBe(429);
    expect(refused.headers['content-type']).toBe('application/problem+json');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(500);
    const served = await getFrom(metrics, '127.8.0.2', { authorization: `Bearer ${token}` });
    expect(served.status).toBe(200);
    expect(served.body).toContain('service="delivery-worker"');
  });

  it('finishes the callbacks in flight on SIGTERM in a burst of 200, and a restarted worker delivers the rest', async () => {
    const w = world({}, database.url);
    const receiver = await startReceiver(always({ status: 200, delayMs: 30 }));
    const { programId } = await w.createTarget(`${receiver.origin}/hook`);
    const sent = await w.sendEvents(programId, 200);

    const first = startWorker(workerEnv(w));
    await waitFor(
      async () => receiver.requests.length,
      (n) => n >= 40,
      20_000,
      '40 callbacks',
    );
    expect(await first.stop('SIGTERM')).toBe(0);
    // Stopped mid-burst, with nothing left running: every job is either done or still waiting.
    const deliveredBefore = await w.prisma.delivery.count({ where: { id: { in: sent.map((s) => s.deliveryId) }, status: 'succeeded' } });
    expect(deliveredBefore).toBeGreaterThanOrEqual(40);
    expect(deliveredBefore).toBeLessThan(200);
    expect(await w.queue.getActiveCount()).toBe(0);

    startWorker(workerEnv(w));
    await w.settled(
      sent.map((s) => s.deliveryId),
      ['succeeded'],
      30_000,
    );
    const received = callbacksPerEvent(receiver);
    expect([...received.keys()].sort()).toEqual(sent.map((s) => s.event.id).sort());
    // A graceful stop lets each callback finish and be recorded, so none is sent twice.
    expect(receiver.requests.length - received.size).toBe(0);
  }, 60_000);

  it('hands the callbacks cut off by SHUTDOWN_TIMEOUT_MS to the next worker once their locks expire', async () => {
    const w = world({}, database.url);
    const receiver = await startReceiver(always({ status: 200, delayMs: 500 }));
    const { programId } = await w.createTarget(`${receiver.origin}/hook`);
    const sent = await w.sendEvents(programId, 40);
    const env = workerEnv(w, { SHUTDOWN_TIMEOUT_MS: '100', WORKER_LOCK_DURATION_MS: '1000', WORKER_STALLED_INTERVAL_MS: '500' });

    const first = startWorker(env);
    await waitFor(
      async () => receiver.requests.length,
      (n) => n >= 8,
      20_000,
      'callbacks in flight',
    );
    // The callbacks in flight take 500 ms, the shutdown 100 ms at most: they are cut off.
    expect(await first.stop('SIGTERM')).toBe(1);
    const cutOff = await w.queue.getActiveCount();
    expect(cutOff).toBeGreaterThan(0);

    startWorker(env);
    await w.settled(
      sent.map((s) => s.deliveryId),
      ['succeeded'],
      30_000,
    );
    const received = callbacksPerEvent(receiver);
    expect(received.size).toBe(40);
    // The merchant got the cut-off callbacks twice at most (webhook-id tells it so).
    expect(receiver.requests.length - received.size).toBeLessThanOrEqual(cutOff);
  }, 60_000);
});
