import type { RecordedRequest, Reply } from '@herald/testing';
import { removeQueueKeys, startService, useMigratedDatabase, waitFor, type ServiceProcess } from '@herald/testing';
import { createRandom, faultSeed } from './support/prng';
import { report } from './support/report';
import { saveServiceLog } from './support/run-dir';
import { useHttpRecorders, useWorlds, type World } from './support/world';

// Ordered delivery through faults (issue 46): a target with ordering "object" answers 500 at
// random to a third of first tries; 100 objects with 10 events each are ingested interleaved in
// several batches; midway a worker process is killed with SIGKILL (case 1) or Redis loses the
// queue (case 2). For every object, the callbacks the receiver answered 200 must arrive in
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
afterEach(async () => {
  const stopped = services.splice(0);
  await Promise.all(stopped.map((service) => service.stop('SIGKILL')));
  for (const service of stopped) saveServiceLog('ordered-delivery-worker', service.output());
});

interface Arrival {
  objectId: string;
  sequence: number;
  status: number;
  arrivedAt: number;
  answeredAt?: number;
}

/** A receiver that answers 500 to about a third of first tries (seeded), 200 otherwise, after 5 ms; it logs every callback. */
function flakyReceiver(seed: number) {
  const random = createRandom(seed);
  const tried = new Set<string>();
  const log: Arrival[] = [];
  const responder = (request: RecordedRequest): Reply => {
    const event = JSON.parse(request.body) as { id: string; objectId: string; sequence: number };
    const first = !tried.has(event.id);
    tried.add(event.id);
    const status = first && random.chance(1 / 3) ? 500 : 200;
    const arrival: Arrival = { objectId: event.objectId, sequence: event.sequence, status, arrivedAt: Date.now() };
    log.push(arrival);
    return (res) => {
      setTimeout(() => {
        arrival.answeredAt = Date.now();
        res.statusCode = status;
        res.end(status === 200 ? 'ok' : 'try again');
      }, 5);
    };
  };
  return { log, responder };
}

/**
 * What the log shows per object: the 200 answers out of sequence order (a duplicate of the same
 * callback, re-sent after a crash, is not out of order), and the callbacks that arrived before
 * the 200 of their predecessor went out.
 */
function orderViolations(log: Arrival[]): { outOfOrder: string[]; early: string[] } {
  const outOfOrder: string[] = [];
  const early: string[] = [];
  for (let o = 0; o < OBJECTS; o += 1) {
    const objectId = `obj-${o}`;
    const mine = log.filter((a) => a.objectId === objectId);
    const delivered = mine.filter((a) => a.status === 200).map((a) => a.sequence);
    const distinct = delivered.filter((sequence, i) => i === 0 || sequence !== delivered[i - 1]);
    if (distinct.join() !== Array.from({ length: PER_OBJECT }, (_, i) => i + 1).join()) outOfOrder.push(`${objectId}: ${delivered.join(',')}`);
    for (const arrival of mine) {
      if (arrival.sequence === 1) continue;
      const firstOk = mine.find((a) => a.sequence === arrival.sequence - 1 && a.status === 200);
      if (!firstOk || firstOk.answeredAt === undefined || arrival.arrivedAt < firstOk.answeredAt) early.push(`${objectId} #${arrival.sequence}`);
    }
  }
  return { outOfOrder, early };
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
  { fault: 'Redis losing the queue (every key of it removed)', seedOffset: 1 },
])(`keeps each object's callbacks in sequence order and loses none through $fault`, async ({ fault, seedOffset }) => {
  const w = world({}, database.url);
  const { log, responder } = flakyReceiver(faultSeed(460 + seedOffset));
  const receiver = await startReceiver(responder);
  const { programId } = await w.createTarget(`${receiver.origin}/hook`, { mode: 'none' }, 'object');
  const env = workerEnv(w);
  const started = Date.now();
  const first = startService('services/delivery-worker/src/main.ts', env);
  services.push(first);
  await first.waitForLog('delivery-worker ready');
  const sent = await ingestInterleaved(w, programId);

  await waitFor(
    () => log.filter((a) => a.status === 200).length,
    (n) => n >= CALLBACKS * 0.3,
    90_000,
    'a third of the callbacks delivered',
  );
  const deliveredAtFault = log.filter((a) => a.status === 200).length;
  if (seedOffset === 0) {
    first.child.kill('SIGKILL');
    await first.exited();
    services.push(startService('services/delivery-worker/src/main.ts', env));
  } else {
    await removeQueueKeys(w.config.redisUrl, w.config.queuePrefix);
  }
  const faultAt = Date.now();

  const rows = await w.settled(
    sent.map((s) => s.deliveryId),
    ['succeeded', 'failed'],
    150_000,
  );
  const delivered = rows.filter((row) => row.status === 'succeeded').length;
  const { outOfOrder, early } = orderViolations(log);
  const answered = new Set(log.filter((a) => a.status === 200).map((a) => `${a.objectId}#${a.sequence}`));
  const parked = rows.filter((row) => row.lastDeferralReason === 'awaiting_predecessor').length;
  // The longest time after the fault during which no callback arrived at all: how long chains stood still.
  const times = [faultAt, ...log.map((a) => a.arrivedAt).filter((at) => at >= faultAt)].sort((a, b) => a - b);
  const longestGap = Math.max(...times.slice(1).map((at, i) => at - times[i]!));

  report(
    `ordered delivery: ${fault}`,
    `${OBJECTS} objects x ${PER_OBJECT} events in ${BATCHES} interleaved batches to an ordered target answering 500 to a third of first tries; ${fault} after ${deliveredAtFault} callbacks delivered`,
    {
      'events accepted': CALLBACKS,
      delivered,
      'callbacks answered 200 (distinct)': answered.size,
      'callback requests received': log.length,
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
