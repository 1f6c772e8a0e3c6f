import { lastRead, startHttpRecorder, useMigratedDatabase, waitFor, type HttpRecorder } from '@herald/testing';
import { Redis } from 'ioredis';
import { startPrivateRedis, type PrivateRedis } from './support/redis-server';
import { report } from './support/report';
import { newEvents, System } from './support/system';

// Scenario 2: the Redis of the queue (a private redis-server) is killed and started again in the
// middle of ingest and delivery. Every accepted event's delivery must arrive, with an append-only
// file (how a queue's Redis should run) and without persistence, where the restart empties Redis
// and the jobs it held are rebuilt from PostgreSQL by the reconciler (docs/delivery.md).

const BATCHES = 40;
const BATCH = 10;
const DOWN_MS = 1_500;

const database = useMigratedDatabase('herald_faults_redis');

let redis: PrivateRedis | undefined;
let system: System | undefined;
let receiver: HttpRecorder | undefined;
afterEach(async () => {
  await system?.close();
  await receiver?.close();
  await redis?.remove();
  system = receiver = redis = undefined;
});

it.each([
  {
    persistent: true,
    label: 'with an append-only file',
    title: 'delivers every accepted event when Redis (with an append-only file) restarts during ingest and delivery',
  },
  {
    persistent: false,
    label: 'without persistence',
    title: 'delivers every accepted event when Redis without persistence restarts (and loses its jobs) during ingest and delivery',
  },
  {
    persistent: false,
    productionReconciler: true,
    label: 'without persistence, the reconciler at its production defaults',
    title: 'delivers every accepted event within 30 s of Redis answering again when it restarts empty, with the reconciler at its production defaults',
  },
])('$title', async ({ persistent, label, productionReconciler = false }) => {
  redis = await startPrivateRedis({ persistent });
  // Callbacks slower than ingest (2 at a time, 50 ms each: 40/s against 100/s), so that the
  // queue holds a backlog of jobs when Redis is killed.
  receiver = await startHttpRecorder(() => ({ status: 200, delayMs: 50 }));
  system = new System(`2-redis-restart-${persistent ? 'aof' : 'volatile'}`, database.url, redis.url, {
    DELIVERY_ATTEMPTS: '20',
    DELIVERY_BACKOFF_MS: '200',
    ENQUEUE_TIMEOUT_MS: '500',
    SWEEPER_GRACE_MS: '1000',
    SWEEPER_INTERVAL_MS: '500',
    // The defaults (a pass a minute, stale after five): only noticing the loss can recover in time.
    ...(productionReconciler ? {} : { RECONCILER_INTERVAL_MS: '1000', RECONCILER_STALE_AFTER_MS: '2000' }),
  });
  await system.startApi();
  await system.startWorker({ WORKER_CONCURRENCY: '2' });
  const tenant = await system.createTenant(`${receiver.origin}/hook`);
  const started = Date.now();

  const acceptedIds: string[] = [];
  const ingestStatus: Record<string, number> = {};
  let restart: Promise<void> | undefined;
  let redisBackAt = 0;
  let jobsAtKill = 0;
  for (let b = 0; b < BATCHES; b++) {
    if (b === Math.floor(BATCHES / 3)) {
      jobsAtKill = await queuedJobs(redis.url, system.queuePrefix);
      await redis.kill('SIGKILL');
      const r = redis;
      restart = new Promise((resolve) => setTimeout(resolve, DOWN_MS))
        .then(() => r.start())
        .then(() => {
          redisBackAt = Date.now();
        });
    }
    const events = newEvents(tenant, BATCH, `b${b}`);
    const answer = await system.ingest(events, 20_000);
    ingestStatus[answer.status] = (ingestStatus[answer.status] ?? 0) + 1;
    if (answer.status === 201) acceptedIds.push(...events.map((event) => String(event.id)));
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await restart;

  const received = (): Set<string> => new Set(receiver!.requests.map((request) => String(request.headers['webhook-id'])));
  await waitFor(received, (got) => acceptedIds.every((id) => got.has(id)), 60_000, 'every accepted event called back', 250).catch(lastRead);
  const got = received();
  const lost = acceptedIds.filter((id) => !got.has(id)).length;
  const requeued = requeuedByReconciler(system.services.map((service) => service.output()).join('\n'));
  // When the last accepted event's first callback arrived, counted from Redis answering again.
  const firstCallbackAt = new Map<string, number>();
  for (const request of receiver.requests) {
    const id = String(request.headers['webhook-id']);
    if (!firstCallbackAt.has(id)) firstCallbackAt.set(id, request.receivedAt);
  }
  const lastDeliveredAfterRestartMs = Math.max(0, ...acceptedIds.map((id) => (firstCallbackAt.get(id) ?? Number.POSITIVE_INFINITY) - redisBackAt));

  report(
    `2. Redis restarted (${label})`,
    `${BATCHES} ingest batches of ${BATCH}, 100 ms apart; the private redis-server was killed (SIGKILL) before batch ${Math.floor(BATCHES / 3) + 1} and started again ${DOWN_MS} ms later, while callbacks were being sent`,
    {
      'events accepted': acceptedIds.length,
      'ingest answers by status': ingestStatus,
      delivered: acceptedIds.length - lost,
      'accepted events never delivered': lost,
      'jobs in Redis (waiting, delayed, active) at the kill': jobsAtKill,
      'callback requests received': receiver.requests.length,
      duplicates: receiver.requests.length - got.size,
      'deliveries requeued by the reconciler': requeued,
      'last accepted event delivered, seconds after Redis answered again': (lastDeliveredAfterRestartMs / 1000).toFixed(1),
      'processes alive': system.services.every((service) => service.child.exitCode === null),
      seconds: ((Date.now() - started) / 1000).toFixed(1),
    },
  );
  expect(Object.keys(ingestStatus).filter((status) => Number(status) >= 500)).toEqual([]);
  expect(lost).toBe(0);
  // Without persistence the restart must have lost jobs, or this test proved nothing.
  if (!persistent) {
    expect(jobsAtKill).toBeGreaterThan(0);
    expect(requeued).toBeGreaterThan(0);
  }
  if (productionReconciler) expect(lastDeliveredAfterRestartMs).toBeLessThanOrEqual(30_000);
});

/** Jobs of the deliveries queue that Redis holds right now. */
async function queuedJobs(redisUrl: string, prefix: string): Promise<number> {
  const redis = new Redis(redisUrl);
  try {
    const key = `${prefix}:deliveries`;
    // Delivery jobs wait in the prioritized set (every one has a priority: the fair share of packages/queue/src/delivery-queue.ts).
    const [wait, prioritized, delayed, active] = await Promise.all([
      redis.llen(`${key}:wait`),
      redis.zcard(`${key}:prioritized`),
      redis.zcard(`${key}:delayed`),
      redis.llen(`${key}:active`),
    ]);
    return wait + prioritized + delayed + active;
  } finally {
    redis.disconnect();
  }
}

/** The sum of `requeued` over the reconciler's log lines. */
function requeuedByReconciler(logs: string): number {
  return logs
    .split('\n')
    .filter((line) => line.includes('reconciler requeued'))
    .reduce((n, line) => n + Number((JSON.parse(line) as { requeued?: number }).requeued ?? 0), 0);
}
