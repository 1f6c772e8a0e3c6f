import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import {
  always,
  closedPort,
  startHttpRecorder,
  startService,
  useMigratedDatabase,
  type HttpRecorder,
  type RecordedRequest,
  type Reply,
  type ServiceProcess,
} from '@herald/testing';
import { report } from './support/report';
import { saveServiceLog } from './support/run-dir';
import { useHttpRecorders, useWorlds } from './support/world';

// Scenario 4: merchants misbehave in every way at once, against one delivery-worker running as a
// process of its own (so that its memory is its own):
//  - "tries": the first two tries of each callback answer one of five ways (500, answering past
//    the timeout, closing the connection before answering, a 500 with a 20 MB body, a 503 with
//    Retry-After: 0), the third 200;
//  - "refused": nothing listens on the target's port for the first seconds (connection refused),
//    then a server comes up on that port;
//  - "flapping": the target flaps between 500 and 200 (three answers of 500, then two of 200) for
//    a long stretch while events keep coming, then answers 200.
// Every callback must be delivered once its merchant recovers, and the worker's peak memory
// (VmHWM of its process) must stay bounded: the 20 MB answers are read no further than 4 KiB.

const WARM_UP_CALLBACKS = 500;
const TRIES_CALLBACKS = 200;
const REFUSED_CALLBACKS = 100;
const REFUSED_FOR_MS = 8_000;
const FLAPPING_BATCHES = 10;
const FLAPPING_BATCH = 20;
const FLAPPING_FOR_MS = 10_000;
const HUGE_BYTES = 20 * 1024 * 1024;
const KINDS = ['500', 'slow', 'closed', 'huge', '503-retry-after'] as const;

const database = useMigratedDatabase('herald_faults_merchant');

const world = useWorlds('4-merchant-misbehaving');
const startReceiver = useHttpRecorders();
let worker: ServiceProcess | undefined;
let late: HttpRecorder | undefined;
afterEach(async () => {
  if (worker) saveServiceLog('4-merchant-misbehaving-worker', worker.output());
  await worker?.stop('SIGKILL');
  await late?.close();
  worker = late = undefined;
});

function hugeAnswer(res: ServerResponse): void {
  res.writeHead(500, { 'content-type': 'text/plain' });
  const chunk = Buffer.alloc(64 * 1024, 'x');
  let sent = 0;
  const pump = (): void => {
    while (sent < HUGE_BYTES && !res.destroyed) {
      sent += chunk.length;
      if (!res.write(chunk)) {
        res.once('drain', pump);
        return;
      }
    }
    res.end();
  };
  res.on('error', () => undefined);
  pump();
}

/** Peak and current resident memory of a process, in MB (Linux /proc). */
function memoryOf(pid: number): { peakMb: number; nowMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => Number(/(\d+) kB/.exec(status.split('\n').find((line) => line.startsWith(field)) ?? '')?.[1] ?? NaN);
  return { peakMb: Math.round(kb('VmHWM:') / 1024), nowMb: Math.round(kb('VmRSS:') / 1024) };
}

it('delivers every callback to merchants that fail, refuse connections and flap, with bounded worker memory', async () => {
  // The producer (this process) sets the attempts of each job; the worker process the backoff.
  const retry = { DELIVERY_ATTEMPTS: '12', DELIVERY_BACKOFF_MS: '50' };
  const w = world(retry, database.url);
  // "tries": each event misbehaves in one of the five ways on its first two tries.
  const tries = new Map<string, number>();
  const kindOf = new Map<string, (typeof KINDS)[number]>();
  const triesReceiver = await startReceiver((request: RecordedRequest): Reply => {
    const id = String(request.headers['webhook-id']);
    const n = (tries.get(id) ?? 0) + 1;
    tries.set(id, n);
    if (!kindOf.has(id)) kindOf.set(id, KINDS[kindOf.size % KINDS.length]!);
    if (n > 2) return { status: 200 };
    switch (kindOf.get(id)) {
      case '500':
        return { status: 500 };
      case 'slow':
        return { status: 200, delayMs: 1_500 };
      case 'closed':
        return (res) => res.socket?.destroy();
      case 'huge':
        return hugeAnswer;
      default:
        return { status: 503, headers: { 'retry-after': '0' } };
    }
  });
  // "flapping": 3 answers of 500, then 2 of 200, over and over, until the stretch is over. Counted by
  // request rather than by clock, because batches sent once a second can fall in step with a
  // one-second cycle and meet only its 200s.
  let flapping = true;
  let flappingRequests = 0;
  const flappingReceiver = await startReceiver(() => (flapping && flappingRequests++ % 5 < 3 ? { status: 500 } : { status: 200 }));
  // "refused": a port where nothing listens yet.
  const refusedPort = await closedPort();

  const triesProgram = await w.createTarget(`${triesReceiver.origin}/hook`);
  const refusedProgram = await w.createTarget(`http://127.0.0.1:${refusedPort}/hook`);
  const flappingProgram = await w.createTarget(`${flappingReceiver.origin}/hook`);

  worker = startService('services/delivery-worker/src/main.ts', {
    NODE_ENV: 'test',
    DATABASE_URL: database.url,
    QUEUE_PREFIX: w.config.queuePrefix,
    METRICS_PORT: '0',
    LOG_LEVEL: 'info',
    ...retry,
    CALLBACK_TIMEOUT_MS: '500',
    WORKER_CONCURRENCY: '16',
    // The scenario is about retries, not the breaker's default 30 s: on a busy machine a "tries"
    // target can open it too (its slow answers time out), and a probe meeting a failing first try
    // doubles that, past the time the scenario waits.
    TARGET_BREAKER_OPEN_SECONDS: '3',
    TARGET_BREAKER_OPEN_MAX_SECONDS: '10',
  });
  await worker.waitForLog('delivery-worker ready', 30_000);
  const pid = worker.child.pid!;
  const atReady = memoryOf(pid);
  // The ceiling to compare with, measured in the same run: the same worker delivering as many
  // callbacks to a merchant that answers 200 at once.
  const wellBehaved = await startReceiver(always({ status: 200 }));
  const wellBehavedProgram = await w.createTarget(`${wellBehaved.origin}/hook`);
  const warmUp = await w.sendEvents(wellBehavedProgram.programId, WARM_UP_CALLBACKS);
  await w.settled(
    warmUp.map((s) => s.deliveryId),
    ['succeeded', 'failed'],
    60_000,
  );
  const afterWarmUp = memoryOf(pid);
  const started = Date.now();

  const triesSent = await w.sendEvents(triesProgram.programId, TRIES_CALLBACKS);
  const refusedSent = await w.sendEvents(refusedProgram.programId, REFUSED_CALLBACKS);
  const flappingSent: typeof triesSent = [];
  // The refused target's server comes up on its port after REFUSED_FOR_MS.
  const refusedUntil = Date.now() + REFUSED_FOR_MS;
  const bringUp = new Promise((resolve) => setTimeout(resolve, REFUSED_FOR_MS)).then(async () => {
    late = await startHttpRecorder(always({ status: 200 }), { port: refusedPort });
  });
  for (let b = 0; b < FLAPPING_BATCHES; b++) {
    flappingSent.push(...(await w.sendEvents(flappingProgram.programId, FLAPPING_BATCH)));
    await new Promise((resolve) => setTimeout(resolve, FLAPPING_FOR_MS / FLAPPING_BATCHES));
  }
  flapping = false;
  const flappingRecoveredAt = Date.now();
  await bringUp;

  const all = [...triesSent, ...refusedSent, ...flappingSent];
  const rows = await w
    .settled(
      all.map((s) => s.deliveryId),
      ['succeeded', 'failed'],
      120_000,
    )
    .catch(async (error: unknown) => {
      // Which merchant's callbacks were still pending, and what their attempts had met.
      const pending = await w.prisma.delivery.groupBy({
        by: ['targetId'],
        where: { id: { in: all.map((s) => s.deliveryId) }, status: 'pending' },
        _count: true,
      });
      const names = new Map([triesProgram, refusedProgram, flappingProgram].map((p, i) => [p.targetId, ['tries', 'refused', 'flapping'][i]]));
      throw new Error(
        `${(error as Error).message}; pending: ${JSON.stringify(Object.fromEntries(pending.map((p) => [names.get(p.targetId) ?? p.targetId, p._count])))}`,
      );
    });
  const memory = memoryOf(pid);
  const sentTo = new Map([
    [triesProgram, triesSent],
    [refusedProgram, refusedSent],
    [flappingProgram, flappingSent],
  ]);
  const ids = (program: { programId: string; targetId: string }): string[] => sentTo.get(program)!.map((s) => s.deliveryId);
  const deliveredOf = (program: { programId: string; targetId: string }): number =>
    rows.filter((row) => row.status === 'succeeded' && ids(program).includes(row.id)).length;
  const attemptsOf = async (program: { programId: string; targetId: string }) =>
    Object.fromEntries(
      (await w.prisma.deliveryAttempt.groupBy({ by: ['errorKind'], where: { deliveryId: { in: ids(program) } }, _count: true })).map((a) => [
        a.errorKind ?? 'none (delivered)',
        a._count,
      ]),
    );
  const biggestKept = await w.prisma.$queryRawUnsafe<Array<{ max: number | null }>>(
    'SELECT max(octet_length(response_body))::int AS max FROM delivery_attempts WHERE delivery_id = ANY($1::uuid[])',
    all.map((s) => s.deliveryId),
  );
  const refusedDelivered = await w.prisma.deliveryAttempt.findMany({
    where: { deliveryId: { in: ids(refusedProgram) }, errorKind: null },
    select: { startedAt: true },
  });
  const flappingDelivered = await w.prisma.delivery.findMany({ where: { id: { in: ids(flappingProgram) } }, select: { completedAt: true } });
  /** Seconds from `since` to the latest of `times`. */
  const lastAfter = (times: Array<Date | null>, since: number): string => ((Math.max(...times.map((t) => t?.getTime() ?? 0)) - since) / 1000).toFixed(1);

  report(
    '4. merchant misbehaving',
    `one delivery-worker process (16 at a time, timeout 500 ms, 12 attempts, backoff from 50 ms); ${TRIES_CALLBACKS} callbacks whose first two tries answered one of ${KINDS.join(', ')} (20 MB body); ${REFUSED_CALLBACKS} callbacks to a port refusing connections for ${REFUSED_FOR_MS / 1000} s, then served; ${FLAPPING_BATCHES * FLAPPING_BATCH} callbacks sent over ${FLAPPING_FOR_MS / 1000} s to a target flapping 500 (3 answers) / 200 (2 answers), then 200`,
    {
      'tries: delivered': `${deliveredOf(triesProgram)} of ${TRIES_CALLBACKS}`,
      'tries: attempts by error kind': await attemptsOf(triesProgram),
      'largest answer kept (bytes)': biggestKept[0]?.max ?? 0,
      'refused: delivered': `${deliveredOf(refusedProgram)} of ${REFUSED_CALLBACKS}`,
      'refused: attempts by error kind': await attemptsOf(refusedProgram),
      'refused: last delivered, seconds after the server came up': lastAfter(
        refusedDelivered.map((a) => a.startedAt),
        refusedUntil,
      ),
      'flapping: delivered': `${deliveredOf(flappingProgram)} of ${FLAPPING_BATCHES * FLAPPING_BATCH}`,
      'flapping: attempts by error kind': await attemptsOf(flappingProgram),
      'flapping: last delivered, seconds after the flapping stopped': lastAfter(
        flappingDelivered.map((d) => d.completedAt),
        flappingRecoveredAt,
      ),
      'worker process memory (MB)': {
        'VmHWM at ready': atReady.peakMb,
        [`VmHWM after ${WARM_UP_CALLBACKS} well-behaved callbacks`]: afterWarmUp.peakMb,
        'VmHWM at the end': memory.peakMb,
        'VmRSS at the end': memory.nowMb,
      },
      'failed for good (last error)': Object.fromEntries(
        [...new Set(rows.filter((row) => row.status === 'failed').map((row) => row.lastError))].map((error) => [
          error,
          rows.filter((row) => row.status === 'failed' && row.lastError === error).length,
        ]),
      ),
      seconds: ((Date.now() - started) / 1000).toFixed(1),
    },
  );
  expect(rows.filter((row) => row.status === 'succeeded')).toHaveLength(all.length);
  expect(await attemptsOf(refusedProgram)).toHaveProperty('connection');
  expect(await attemptsOf(flappingProgram)).toHaveProperty('http_status');
  // 80 answers of 20 MB, up to 16 at a time, would be 320 MB if they were read: only 4 KiB each is.
  expect(memory.peakMb - afterWarmUp.peakMb).toBeLessThan(100);
  expect(worker.child.exitCode).toBeNull();
});
