import { always, callbacksPerEvent, startService, useMigratedDatabase, waitFor, type ServiceProcess } from '@herald/testing';
import { report } from './support/report';
import { saveServiceLog } from './support/run-dir';
import { useHttpRecorders, useWorlds } from './support/world';

// Scenario 1: a delivery-worker process is killed with SIGKILL in the middle of 1,000 callbacks (no
// graceful shutdown, jobs left locked); a new worker is started. Every delivery must be delivered
// at least once; the callbacks sent twice are counted (the merchant drops them by webhook-id).

const CALLBACKS = 1_000;

// A database of its own: the workers' sweeper must not find other files' deliveries.
const database = useMigratedDatabase('herald_faults_kill');

const world = useWorlds('1-worker-killed');
const startReceiver = useHttpRecorders();
const services: ServiceProcess[] = [];
afterEach(async () => {
  const stopped = services.splice(0);
  await Promise.all(stopped.map((service) => service.stop('SIGKILL')));
  for (const service of stopped) saveServiceLog('1-worker-killed-worker', service.output());
});

it.each<{ locks: string; lockEnv: Record<string, string>; longestGapMs: number | undefined }>([
  { locks: 'lock 2 s, stalled check 1 s', lockEnv: { WORKER_LOCK_DURATION_MS: '2000', WORKER_STALLED_INTERVAL_MS: '1000' }, longestGapMs: undefined },
  // The production defaults (lock 10 s, stalled check 5 s): a dead worker's jobs are back within about 15 s.
  { locks: 'the production defaults (lock 10 s, stalled check 5 s)', lockEnv: {}, longestGapMs: 15_000 },
])(
  `delivers all of ${CALLBACKS} callbacks at least once when the worker is killed with SIGKILL midway, with $locks`,
  async ({ locks, lockEnv, longestGapMs }) => {
    const w = world({}, database.url);
    const receiver = await startReceiver(always({ status: 200, delayMs: 20 }));
    const { programId } = await w.createTarget(`${receiver.origin}/hook`);
    const sent = await w.sendEvents(programId, CALLBACKS);
    const env = {
      NODE_ENV: 'test',
      DATABASE_URL: database.url,
      QUEUE_PREFIX: w.config.queuePrefix,
      METRICS_PORT: '0',
      DELIVERY_BACKOFF_MS: '100',
      WORKER_CONCURRENCY: '16',
      // A killed worker's jobs stay locked this long before the next worker takes them.
      ...lockEnv,
    };
    const started = Date.now();

    const first = startService('services/delivery-worker/src/main.ts', env);
    services.push(first);
    await waitFor(
      async () => receiver.requests.length,
      (n) => n >= CALLBACKS * 0.3,
      60_000,
      'a third of the callbacks',
    );
    first.child.kill('SIGKILL');
    const killedAt = Date.now();
    await first.exited();
    const receivedBeforeKill = receiver.requests.length;
    const activeAtKill = await w.queue.getActiveCount();

    const second = startService('services/delivery-worker/src/main.ts', env);
    services.push(second);
    const rows = await w.settled(
      sent.map((s) => s.deliveryId),
      ['succeeded', 'failed'],
      90_000,
    );
    const received = callbacksPerEvent(receiver);
    const delivered = rows.filter((row) => row.status === 'succeeded').length;
    const neverReceived = sent.filter((s) => !received.has(s.event.id)).length;
    const duplicates = receiver.requests.length - received.size;
    // The longest time from the kill on during which no callback arrived at all.
    const times = [killedAt, ...receiver.requests.map((request) => request.receivedAt).filter((at) => at >= killedAt)].sort((a, b) => a - b);
    const longestGap = Math.max(...times.slice(1).map((at, i) => at - times[i]!));

    report(
      '1. worker killed with SIGKILL',
      `${CALLBACKS} callbacks (receiver answers 200 after 20 ms); the worker was killed with SIGKILL after ${receivedBeforeKill} callbacks, a new worker started (${locks})`,
      {
        'events accepted': CALLBACKS,
        'callbacks received before the kill': receivedBeforeKill,
        'jobs active (locked) at the kill': activeAtKill,
        delivered,
        'events never received': neverReceived,
        'callback requests received': receiver.requests.length,
        duplicates,
        'longest gap in callbacks after the kill (s)': (longestGap / 1000).toFixed(1),
        seconds: ((Date.now() - started) / 1000).toFixed(1),
      },
    );
    expect(neverReceived).toBe(0);
    expect(delivered).toBe(CALLBACKS);
    // A duplicate is a callback in flight at the kill: sent, maybe answered, never recorded.
    expect(duplicates).toBeLessThanOrEqual(activeAtKill + 16);
    if (longestGapMs !== undefined) expect(longestGap).toBeLessThanOrEqual(longestGapMs);
  },
);
