import {
  callbackEvent,
  objectOrderViolations,
  startService,
  useMigratedDatabase,
  waitFor,
  type RecordedRequest,
  type Reply,
  type ServiceProcess,
} from '@herald/testing';
import { createRandom, faultSeed } from './support/prng';
import { startPrivateRedis, type PrivateRedis } from './support/redis-server';
import { report } from './support/report';
import { saveServiceLog } from './support/run-dir';
import { useHttpRecorders, useWorlds, type World } from './support/world';

// Ordered delivery through faults (issue 46): a target with ordering "object" answers 500 at
// random to a third of first tries; 100 objects with 10 events each are ingested interleaved in
// several batches; midway a worker process is killed with SIGKILL (case 1), or the queue's Redis
// (a private redis-server without persistence) is killed and started again empty (case 2). For every object, the callbacks the receiver answered 200 must arrive in
// sequence order 1..10, none before the 200 of its predecessor went out, and nothing is lost.

const OBJECTS = 100;
const PER_OBJECT = 10;
const BATCHES = 5;
const CALLBACKS = OBJECTS * PER_OBJECT;

// A database of its own: the workers' sweepers and reconcilers must not find other files' deliveries.
const database = useMigratedDatabase('herald_faults_order');
const world = useWorlds('ordered-delivery');
const startReceiver = useHttpRecorders();
const services: ServiceProcess[] = [];
// Removed after every world is closed (their afterEach uses it).
const privateRedis: PrivateRedis[] = [];
afterAll(async () => {
  await Promise.all(privateRedis.splice(0).map((redis) => redis.remove()));
});
afterEach(async () => {
  const stopped = services.splice(0);
  await Promise.all(stopped.map((service) => service.stop('SIGKILL')));
  for (const service of stopped) saveServiceLog('ordered-delivery-worker', service.output());
});

/** A responder that answers 500 to about a third of first tries (seeded), 200 otherwise, after 5 ms. */
function flaky(seed: number) {
  const random = createRandom(seed);
  const tried = new Set<string>();
  return (request: RecordedRequest): Reply => {
    const { id } = callbackEvent(request);
    const first = !tried.has(id);
    tried.add(id);
    return first && random.chance(1 / 3) ? { status: 500, body: 'try again', delayMs: 5 } : { status: 200, body: 'ok', delayMs: 5 };
  };
}

/** The events: BATCHES ingests, each with PER_OBJECT / BATCHES events of every object, objects interleaved. */
async function ingestInterleaved(w: World, programId: string) {
  const perBatch = OBJECTS * (PER_OBJECT / BATCHES);
  const sent = [];
  for (let b = 0; b < BATCHES; b += 1) sent.push(...(await w.sendEvents(programId, perBatch, (i) => `obj-${i % OBJECTS}`)));
  return sent;
}

function workerEnv(w: World): Record<string, string> {
  return {
    REDIS_URL: w.config.redisUrl,
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    DATABASE_URL: database.url,
    QUEUE_PREFIX: w.config.queuePrefix,
    METRICS_PORT: '0',
    WORKER_CONCURRENCY: '16',
    DELIVERY_BACKOFF_MS: '200',
    // A killed worker's jobs are back within about 3 s; a lost wake-up or queue within about 1 s.
    WORKER_LOCK_DURATION_MS: '2000',
    WORKER_STALLED_INTERVAL_MS: '1000',
    RECONCILER_INTERVAL_MS: '1000',
    RECONCILER_LOSS_CHECK_MS: '500',
  };
}

it.each([
  { fault: 'a worker process killed with SIGKILL', seedOffset: 0 },
  { fault: 'the queue’s Redis restarted empty (killed, no persistence)', seedOffset: 1 },
])(`keeps each object's callbacks in sequence order and loses none through $fault`, async ({ fault, seedOffset }) => {
  const redis = seedOffset === 1 ? await startPrivateRedis() : undefined;
  if (redis) privateRedis.push(redis);
  const w = world(redis ? { REDIS_URL: redis.url } : {}, database.url);
  const receiver = await startReceiver(flaky(faultSeed(460 + seedOffset)));
  const answered200 = () => receiver.requests.filter((r) => r.answer?.status === 200);
  const { programId } = await w.createTarget(`${receiver.origin}/hook`, { mode: 'none' }, 'object');
  const env = workerEnv(w);
  const started = Date.now();
  const first = startService('services/delivery-worker/src/main.ts', env);
  services.push(first);
  await first.waitForLog('delivery-worker ready');
  const sent = await ingestInterleaved(w, programId);

  await waitFor(
    () => answered200().length,
    (n) => n >= CALLBACKS * 0.3,
    90_000,
    'a third of the callbacks delivered',
  );
  const deliveredAtFault = answered200().length;
  if (seedOffset === 0) {
    first.child.kill('SIGKILL');
    await first.exited();
    services.push(startService('services/delivery-worker/src/main.ts', env));
  } else {
    await redis!.kill('SIGKILL');
    await redis!.start();
  }
  const faultAt = Date.now();

  const rows = await w.settled(
    sent.map((s) => s.deliveryId),
    ['succeeded', 'failed'],
    150_000,
  );
  const delivered = rows.filter((row) => row.status === 'succeeded').length;
  const objectIds = Array.from({ length: OBJECTS }, (_, o) => `obj-${o}`);
  const { outOfOrder, early } = objectOrderViolations(receiver.requests, objectIds, PER_OBJECT);
  const answered = new Set(answered200().map((r) => callbackEvent(r).id));
  const parked = rows.filter((row) => row.lastDeferralReason === 'awaiting_predecessor').length;
  // The longest time after the fault during which no callback arrived at all: how long chains stood still.
  const times = [faultAt, ...receiver.requests.map((r) => r.receivedAt).filter((at) => at >= faultAt)].sort((a, b) => a - b);
  const longestGap = Math.max(...times.slice(1).map((at, i) => at - times[i]!));

  report(
    `ordered delivery: ${fault}`,
    `${OBJECTS} objects x ${PER_OBJECT} events in ${BATCHES} interleaved batches to an ordered target answering 500 to a third of first tries; ${fault} after ${deliveredAtFault} callbacks delivered`,
    {
      'events accepted': CALLBACKS,
      delivered,
      'callbacks answered 200 (distinct)': answered.size,
      'callback requests received': receiver.requests.length,
      'deliveries that waited for their predecessor': parked,
      'objects out of order': outOfOrder.length,
      'callbacks sent before their predecessor’s 200': early.length,
      'longest gap in callbacks after the fault (s)': (longestGap / 1000).toFixed(1),
      seconds: ((Date.now() - started) / 1000).toFixed(1),
    },
  );
  expect(delivered).toBe(CALLBACKS);
  expect(answered.size).toBe(CALLBACKS);
  expect(outOfOrder).toEqual([]);
  expect(early).toEqual([]);
  expect(parked).toBeGreaterThan(0);
});
