/**
 * `pnpm bench [--quick] [--only isolation|api-isolation]`: measures Herald against this machine's own ceilings, in the same run.
 *
 * Everything runs on 127.0.0.1 with its own database (created, migrated, dropped), its own queue
 * prefix (keys deleted at the end) and its own receiver process. Every figure stands beside a
 * ceiling measured in the same run, as a ratio, because these machines are shared and noisy.
 * Writes bench/results/latest.json and prints a table. Exits 1 on an error, never on slowness.
 * `--only isolation` runs the isolation section alone (bench/isolation.ts), writing
 * bench/results/latest-isolation.json; `--only api-isolation` the API isolation section
 * (bench/api-isolation.ts), writing bench/results/latest-api-isolation.json; `--only ceilings` the
 * durable delivery and bare Express + SQL ceilings beside Herald (bench/ceilings.ts); `--only soak`
 * the soak (bench/soak.ts), which the full run ends with: `--soak-minutes N` (or BENCH_SOAK_MINUTES,
 * default 10) and BENCH_SOAK_RATE (events/s, default 150).
 * `--scale`: the scale run alone (bench/scale.ts): GET /events at 1,000,000 and 10,000,000 events
 * (BENCH_SCALE_EVENTS) and the per-row and per-request costs, writing bench/results/latest-scale.json.
 */
import { execSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { applyMigrations, dropDatabase, ensureDatabase } from '@herald/db';
import { createPrismaClient, type PrismaClient } from '@herald/db/prisma';
import { callJson, databaseUrlFor, requestJson, waitFor, uniqueId, type ServiceProcess } from '@herald/testing';
import { CpuAccounts, cpuByRole, cpuPerUnit, formatCpu, machineBusy, type CpuSnapshot } from './cpu';
import { ingestBatches } from './ingest-load';
import { runApiIsolation } from './api-isolation';
import { cannon, durableDeliveryCeiling, durableRows, type Drain, type DrainResult } from './ceilings';
import { runIsolation } from './isolation';
import {
  deliveryRoundRows,
  deliveryRounds,
  listRoundRows,
  listRounds,
  median,
  medianRound,
  runCeilingsSection,
  startListCeilings,
  type CeilingsSectionContext,
} from './paired-rounds';
import { postJson } from './post-json';
import { createRawPoster } from './raw-post';
import { buildServices, createPaymentTenant, serviceEnv, startService } from './setup';
import { runScale } from './scale';
import { runSoak } from './soak';
import { filteredCount, seedEvents } from './seed-events';

const QUICK = process.argv.includes('--quick');
const SECTIONS = ['isolation', 'api-isolation', 'ceilings', 'soak'] as const;
/** `--only <section>`: run that section alone. */
const ONLY = ((): (typeof SECTIONS)[number] | undefined => {
  const at = process.argv.indexOf('--only');
  if (at === -1) return undefined;
  const section = process.argv[at + 1];
  if (!SECTIONS.includes(section as (typeof SECTIONS)[number])) {
    console.error(`--only takes one of: ${SECTIONS.join(', ')}`);
    process.exit(2);
  }
  return section as (typeof SECTIONS)[number];
})();
/** `--scale`: the scale run alone. */
const SCALE = process.argv.includes('--scale');
const SCALE_EVENTS = Number(process.env.BENCH_SCALE_EVENTS ?? 10_000_000);
if (SCALE && !(Number.isInteger(SCALE_EVENTS) && SCALE_EVENTS >= 100_000)) {
  console.error('BENCH_SCALE_EVENTS must be an integer of at least 100000');
  process.exit(2);
}
/** What this run is, in the results file's name and the table's title. */
const MODE = SCALE ? 'scale' : `${QUICK ? 'quick' : 'full'}${ONLY ? `, ${ONLY} only` : ''}`;
const ROOT = path.resolve(__dirname, '..');
/**
 * The commit the run measures (`+uncommitted` when the tree had changes), read at the start, when
 * the services are built: a file edited while the run lasts does not mark it.
 */
const MEASURED_COMMIT = gitCommit();
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ADMIN_TOKEN = 'dev-admin-token';
const INGEST_TOKEN = 'dev-ingest-token';
const WORKER_CONCURRENCY = 16;
/** The soak: how long (`--soak-minutes N` or BENCH_SOAK_MINUTES) and how many events per second (BENCH_SOAK_RATE). */
const SOAK_MINUTES_FLAG = process.argv.indexOf('--soak-minutes');
const SOAK = {
  seconds: Math.round(60 * Number(SOAK_MINUTES_FLAG === -1 ? (process.env.BENCH_SOAK_MINUTES ?? 10) : process.argv[SOAK_MINUTES_FLAG + 1])),
  rate: Number(process.env.BENCH_SOAK_RATE ?? 150),
};
if (!(SOAK.seconds >= 30 && SOAK.rate > 0)) {
  console.error('--soak-minutes (BENCH_SOAK_MINUTES) must be at least 0.5 and BENCH_SOAK_RATE a positive number');
  process.exit(2);
}

/** Sizes of each scenario: every loop is bounded in count and in time. */
const SIZE = QUICK
  ? {
      ingestEvents: 1_000,
      ingestBatch: 250,
      rawPosts: 3_000,
      bareJobs: 3_000,
      listEvents: 20_000,
      deepPage: 200,
      listSeconds: 3,
      rounds: 2,
      listRoundSeconds: 3,
      oauthEvents: 500,
      renewalLifetime: 2,
      renewalSeconds: 5,
      renewalRate: 40,
      e2eRate: 40,
      e2eSeconds: 3,
    }
  : {
      ingestEvents: 15_000,
      ingestBatch: 500,
      rawPosts: 40_000,
      bareJobs: 30_000,
      listEvents: 1_000_000,
      deepPage: 10_000,
      listSeconds: 10,
      rounds: 3,
      listRoundSeconds: 5,
      oauthEvents: 10_000,
      renewalLifetime: 10,
      renewalSeconds: 30,
      renewalRate: 100,
      e2eRate: 100,
      e2eSeconds: 15,
    };
/** Longest any wait for deliveries may take before the run fails. */
const DRAIN_TIMEOUT_MS = QUICK ? 60_000 : 180_000;

interface Row {
  scenario: string;
  figure: number;
  unit: string;
  ceiling?: number;
  ceilingName?: string;
  ratio?: number;
  target?: string;
  note?: string;
  /** CPU per callback by process, for the delivery rows (in the JSON only). */
  cpu?: string;
}

const rows: Row[] = [];
/** Processes whose error log lines are printed when the run fails. */
const serviceLogs: Array<[string, ServiceProcess]> = [];
const cleanups: Array<() => Promise<void>> = [];
const log = (message: string): void => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);
const round = (n: number, digits = 2): number => Number(n.toFixed(digits));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function addRow(row: Row): void {
  if (row.ceiling !== undefined && row.ceiling > 0 && row.ratio === undefined) row.ratio = round(row.figure / row.ceiling, 3);
  rows.push(row);
  log(`${row.scenario}: ${row.figure} ${row.unit}${row.ratio !== undefined ? ` (ratio ${row.ratio} of ${row.ceilingName})` : ''}`);
}

async function startListening(script: string, env: Record<string, string>): Promise<{ proc: ServiceProcess; port: number }> {
  const proc = startService(script, env);
  cleanups.push(async () => void (await proc.stop('SIGTERM', 15_000)));
  const entry = await proc.waitForLog(/listening/, 30_000);
  return { proc, port: Number(entry.port) };
}

/** Starts a process that the run's cleanup stops too. */
function startProcess(script: string, env: Record<string, string>): ServiceProcess {
  const proc = startService(script, env);
  cleanups.push(async () => void (await proc.stop('SIGTERM', 15_000)));
  return proc;
}

/** Peak resident set size (VmHWM) of a process, in MB. */
function peakRssMb(pid: number | undefined): number {
  if (!pid) return NaN;
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? round(Number(match[1]) / 1024, 1) : NaN;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** How busy the machine's cores were during a drain, for a row's note. */
function busyNote(result: DrainResult): string {
  return `machine ${Math.round(result.busy * 100)} % busy`;
}

/** What bench/receiver.ts counted since its last reset. */
interface ReceiverStats {
  callbacks: number;
  tokens: number;
  /** When each token request arrived (ms since the epoch), in order. */
  tokenTimes: number[];
  /** When the last callback arrived (ms since the epoch). */
  lastCallbackAt: number;
}

/**
 * Ingests `count` single events at `rate` per second (fields from `fields(i)`), each checked for a
 * 201; returns when each was sent, by event id (and fills `answeredAt`, when given, with when each
 * was answered).
 */
async function postEventsAtRate(
  apiUrl: string,
  count: number,
  rate: number,
  fields: (i: number) => Record<string, string>,
  answeredAt?: Map<string, number>,
): Promise<Map<string, number>> {
  const sentAt = new Map<string, number>();
  const started = Date.now();
  const pending: Array<Promise<unknown>> = [];
  for (let i = 0; i < count; i += 1) {
    const wait = started + (i * 1000) / rate - Date.now();
    if (wait > 0) await sleep(wait);
    const eventId = `Event-${randomUUID()}`;
    sentAt.set(eventId, Date.now());
    // Settled at once, so that a failed request is reported by the await below, never as an
    // unhandled rejection that would end the process before it cleans up.
    pending.push(
      postJson(`${apiUrl}/internal/events`, INGEST_TOKEN, { id: eventId, ...fields(i) }).then(
        ({ status, text }) => {
          if (status !== 201) return new Error(`POST /internal/events answered ${status}: ${text.slice(0, 500)}`);
          answeredAt?.set(eventId, Date.now());
          return undefined;
        },
        (error: unknown) => error,
      ),
    );
  }
  const failed = (await Promise.all(pending)).filter((e): e is Error => e instanceof Error);
  if (failed.length > 0) throw new Error(`${failed.length} of ${count} ingest requests failed, the first: ${failed[0]!.message}`);
  return sentAt;
}

async function deleteRedisKeys(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 2 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

const rawPoster = createRawPoster();

/** Ceiling 1: a raw POST loop (node:http, keep-alive) at the given concurrency. */
async function rawPostLoop(url: string, concurrency: number, total: number): Promise<number> {
  let sent = 0;
  const started = performance.now();
  const deadline = Date.now() + 60_000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < total && Date.now() < deadline) {
        sent += 1;
        await rawPoster.post(url);
      }
    }),
  );
  return sent / ((performance.now() - started) / 1000);
}

/**
 * Ceiling 2: bare BullMQ workers (no database), each in its own process like a delivery-worker,
 * whose processor does one raw POST to the receiver. Returns the rate the receiver saw them at.
 */
async function bareBullmq(options: { url: string; concurrency: number; total: number; prefix: string; processes: number; drain: Drain }): Promise<DrainResult> {
  const queue = new Queue('bare', {
    connection: {
      host: '127.0.0.1',
      port: Number(new URL(REDIS_URL).port || 6379),
      db: Number(new URL(REDIS_URL).pathname.slice(1) || 0),
      maxRetriesPerRequest: null,
    },
    prefix: options.prefix,
  });
  const workers: ServiceProcess[] = [];
  try {
    for (let i = 0; i < options.total; i += 1000) {
      await queue.addBulk(
        Array.from({ length: Math.min(1000, options.total - i) }, (_, j) => ({
          name: 'delivery',
          data: { deliveryId: randomUUID(), eventId: `Event-${i + j}`, targetId: randomUUID(), programId: 'p', merchantId: null },
          opts: { jobId: `bare-${i + j}`, removeOnComplete: { age: 3600 }, attempts: 1 },
        })),
      );
    }
    for (let i = 0; i < options.processes; i += 1) {
      const worker = startService('bench/bare-worker.ts', {
        REDIS_URL,
        BENCH_TARGET_URL: options.url,
        BENCH_PREFIX: options.prefix,
        BENCH_QUEUE: 'bare',
        BENCH_CONCURRENCY: String(options.concurrency),
      });
      workers.push(worker);
      cleanups.push(async () => void (await worker.stop('SIGTERM', 15_000)));
    }
    return await options.drain(options.total, workers, 'bare BullMQ worker');
  } finally {
    for (const worker of workers) await worker.stop('SIGTERM', 15_000);
    await queue.obliterate({ force: true });
    await queue.close();
  }
}

async function main(): Promise<void> {
  const runStarted = Date.now();
  const id = uniqueId('bench').toLowerCase();
  const databaseUrl = databaseUrlFor(`herald_${id}`);
  const queuePrefix = `herald_${id}`;
  const barePrefix = `${queuePrefix}_bare`;
  log(`${MODE} run: database herald_${id}, queue prefix ${queuePrefix}`);
  // The services run from the production build (see startService in ./setup).
  await buildServices();

  await ensureDatabase(databaseUrl);
  cleanups.push(() => dropDatabase(databaseUrl));
  cleanups.push(() => deleteRedisKeys(queuePrefix));
  cleanups.push(() => deleteRedisKeys(barePrefix));
  await applyMigrations(databaseUrl);
  const prisma: PrismaClient = createPrismaClient(databaseUrl, { maxConnections: 2 });
  cleanups.push(() => prisma.$disconnect());
  if (ONLY === 'api-isolation') {
    await apiIsolation({ databaseUrl, queuePrefix, prisma });
    report(runStarted);
    return;
  }

  const receiver = await startListening('bench/receiver.ts', {});
  const receiverUrl = `http://127.0.0.1:${receiver.port}`;
  const env = { ...serviceEnv({ databaseUrl, redisUrl: REDIS_URL, queuePrefix }), WORKER_CONCURRENCY: String(WORKER_CONCURRENCY) };
  const api = await startListening('services/events-api/src/server.ts', { ...env, PORT: '0' });
  serviceLogs.push(['events-api', api.proc]);
  const apiUrl = `http://127.0.0.1:${api.port}`;
  const stats = (): Promise<ReceiverStats> => callJson('GET', `${receiverUrl}/stats`) as Promise<ReceiverStats>;
  const reset = async (): Promise<void> => {
    await callJson('POST', `${receiverUrl}/reset`);
  };

  // Tenants: P/M with a program target and a merchant target (fan-out 2 for payments);
  // O with an OAuth program target; L for the list benchmark (no target, no deliveries).
  await createPaymentTenant(apiUrl, ADMIN_TOKEN, `${receiverUrl}/hook`);
  await callJson('POST', `${apiUrl}/admin/programs`, { token: ADMIN_TOKEN, body: { id: 'bench-o', name: 'oauth' }, expect: [201] });
  // ?verify=false: the scenario counts the worker's token requests, not the check a PUT makes.
  await callJson('PUT', `${apiUrl}/admin/programs/bench-o/notification-target?verify=false`, {
    token: ADMIN_TOKEN,
    body: {
      url: `${receiverUrl}/hook/oauth`,
      auth: { mode: 'oauth', authUrl: `${receiverUrl}/token`, username: 'bench-client', password: 'bench-secret' },
    },
    expect: [200, 201],
  });

  const cpu = new CpuAccounts(`herald_${id}`);
  cpu.add(receiver.proc.child.pid, 'receiver');
  cpu.add(api.proc.child.pid, 'events-api');
  if (SCALE) {
    await runScale({
      databaseUrl,
      apiUrl,
      // The smaller table: a database of its own, with an events-api of its own on it. Its name
      // starts with the run's, so that CpuAccounts counts its PostgreSQL backends too.
      smallerTable: async () => {
        const url = databaseUrlFor(`herald_${id}_small`);
        await ensureDatabase(url);
        cleanups.push(() => dropDatabase(url));
        await applyMigrations(url);
        const small = await startListening('services/events-api/src/server.ts', {
          ...serviceEnv({ databaseUrl: url, redisUrl: REDIS_URL, queuePrefix }),
          PORT: '0',
        });
        serviceLogs.push(['events-api (smaller table)', small.proc]);
        cpu.add(small.proc.child.pid, 'events-api');
        return { databaseUrl: url, apiUrl: `http://127.0.0.1:${small.port}` };
      },
      receiverUrl,
      adminToken: ADMIN_TOKEN,
      ingestToken: INGEST_TOKEN,
      cpu,
      startWorker: () => {
        const worker = startProcess('services/delivery-worker/src/main.ts', env);
        serviceLogs.push(['delivery-worker (scale)', worker]);
        return worker;
      },
      events: SCALE_EVENTS,
      ingestEvents: 20_000,
      listRounds: 3,
      listSeconds: 5,
      addRow,
      log,
    });
    report(runStarted);
    return;
  }
  // Times the receiver from the first callback to the `expected`-th, with the CPU that each process
  // and the whole machine spent meanwhile; `workers` (started, maybe not ready yet) are counted as `role`.
  const drain: Drain = async (expected, workers, role) => {
    for (const w of workers) cpu.add(w.child.pid, role ?? 'worker');
    let first: { at: number; count: number; cpu: CpuSnapshot } | undefined;
    const read = async (): Promise<{ callbacks: number; now: number }> => {
      const { callbacks } = await stats();
      const now = performance.now();
      if (!first && callbacks > 0) first = { at: now, count: callbacks, cpu: cpu.snapshot() };
      // A worker that died (at start, say) fails the run now rather than at the deadline.
      const dead = callbacks < expected && workers.find((w) => w.child.exitCode !== null || w.child.signalCode !== null);
      if (dead) throw new Error(`a ${role ?? 'worker'} process exited during the drain: ${dead.output().slice(-2_000)}`);
      return { callbacks, now };
    };
    const { callbacks, now } = await waitFor(
      read,
      (r) => first !== undefined && r.callbacks >= expected,
      DRAIN_TIMEOUT_MS,
      `${expected} callbacks at the receiver`,
      50,
    );
    const after = cpu.snapshot();
    const seconds = (now - first!.at) / 1000;
    const done = callbacks - first!.count;
    const result = {
      rate: seconds > 0 ? done / seconds : NaN,
      seconds,
      cpu: cpuByRole(first!.cpu, after, done),
      role: role ?? '',
      busy: machineBusy(first!.cpu, after),
    };
    if (role)
      log(`${role}: ${Math.round(result.rate)} callbacks/s, machine ${Math.round(result.busy * 100)} % busy, CPU per callback: ${formatCpu(result.cpu)}`);
    return result;
  };

  // The isolation section: one delivery-worker with the default settings (not WORKER_CONCURRENCY above).
  const isolation = (): Promise<void> =>
    runIsolation({
      quick: QUICK,
      apiUrl,
      receiverUrl,
      adminToken: ADMIN_TOKEN,
      ingestToken: INGEST_TOKEN,
      prisma,
      startWorker: () => {
        const worker = startService('services/delivery-worker/src/main.ts', serviceEnv({ databaseUrl, redisUrl: REDIS_URL, queuePrefix }));
        cleanups.push(async () => void (await worker.stop('SIGTERM', 15_000)));
        serviceLogs.push(['delivery-worker (isolation)', worker]);
        return worker;
      },
      addRow,
      log,
    });
  if (ONLY === 'isolation') {
    await isolation();
    report(runStarted);
    return;
  }
  // The soak: one delivery-worker with the default settings, like the isolation section's.
  const soak = (): Promise<void> =>
    runSoak({
      apiUrl,
      receiverUrl,
      adminToken: ADMIN_TOKEN,
      ingestToken: INGEST_TOKEN,
      redisUrl: REDIS_URL,
      queuePrefix,
      databaseUrl,
      seconds: SOAK.seconds,
      rate: SOAK.rate,
      failEvery: 20,
      startWorker: () => {
        const worker = startProcess('services/delivery-worker/src/main.ts', serviceEnv({ databaseUrl, redisUrl: REDIS_URL, queuePrefix }));
        serviceLogs.push(['delivery-worker (soak)', worker]);
        return worker;
      },
      addRow,
      log,
    });
  if (ONLY === 'soak') {
    await soak();
    report(runStarted);
    return;
  }
  // Herald's figures with a ratio target, beside their ceilings in alternated rounds (bench/paired-rounds.ts).
  const paired: CeilingsSectionContext = {
    apiUrl,
    receiverUrl,
    databaseUrl,
    redisUrl: REDIS_URL,
    barePrefix,
    adminToken: ADMIN_TOKEN,
    ingestToken: INGEST_TOKEN,
    prisma,
    concurrency: WORKER_CONCURRENCY,
    sizes: SIZE,
    rounds: SIZE.rounds,
    drain,
    resetReceiver: reset,
    bareBullmq: () =>
      bareBullmq({ url: `${receiverUrl}/hook/bare`, concurrency: WORKER_CONCURRENCY, total: SIZE.bareJobs, prefix: barePrefix, processes: 1, drain }),
    startHeraldWorker: () => {
      const worker = startProcess('services/delivery-worker/src/main.ts', env);
      serviceLogs.push(['delivery-worker (paired rounds)', worker]);
      return worker;
    },
    startProcess,
    startListening,
    peakRssMb,
    addRow,
    log,
  };
  if (ONLY === 'ceilings') {
    await runCeilingsSection(paired);
    report(runStarted);
    return;
  }

  // --- Ceilings of delivery, same receiver, same concurrency ---
  await reset();
  // Warm-up (JIT, connection pools) so that the first ceiling is not measured cold.
  await rawPostLoop(`${receiverUrl}/hook/raw`, 2 * WORKER_CONCURRENCY, 2_000);
  const raw16 = await rawPostLoop(`${receiverUrl}/hook/raw`, WORKER_CONCURRENCY, SIZE.rawPosts);
  const raw32 = await rawPostLoop(`${receiverUrl}/hook/raw`, 2 * WORKER_CONCURRENCY, SIZE.rawPosts);
  addRow({ scenario: `ceiling: raw POST loop, ${WORKER_CONCURRENCY} in flight`, figure: round(raw16, 0), unit: 'req/s' });
  addRow({ scenario: `ceiling: raw POST loop, ${2 * WORKER_CONCURRENCY} in flight`, figure: round(raw32, 0), unit: 'req/s' });
  await reset();
  const bareTwo = await bareBullmq({
    url: `${receiverUrl}/hook/bare`,
    concurrency: WORKER_CONCURRENCY,
    total: SIZE.bareJobs,
    prefix: barePrefix,
    processes: 2,
    drain,
  });
  // The durable delivery ceiling (bench/ceilings.ts) in 2 processes: the same, plus each attempt recorded in PostgreSQL.
  await reset();
  const durableTwo = await durableDeliveryCeiling({
    databaseUrl,
    redisUrl: REDIS_URL,
    url: `${receiverUrl}/hook/durable`,
    prefix: barePrefix,
    concurrency: WORKER_CONCURRENCY,
    total: SIZE.bareJobs,
    processes: 2,
    programId: 'bench-p',
    merchantId: 'bench-m',
    drain,
    startProcess,
  });

  // --- Ingest and 1 delivery-worker, beside their ceilings in alternated rounds ---
  const rounds = await deliveryRounds(paired, SIZE.rounds);
  for (const row of deliveryRoundRows(rounds, { concurrency: WORKER_CONCURRENCY, ingestBatch: SIZE.ingestBatch })) addRow(row);
  await deleteRedisKeys(barePrefix);
  const bare = median(rounds.map((r) => r.delivery.bare.rate));
  addRow({
    scenario: `ceiling: 2 bare BullMQ worker processes + 1 POST, concurrency ${WORKER_CONCURRENCY} each`,
    figure: round(bareTwo.rate, 0),
    unit: 'jobs/s',
    ceiling: bare,
    ceilingName: '1 bare worker (median of the rounds)',
    note: busyNote(bareTwo),
    cpu: formatCpu(bareTwo.cpu),
  });
  addRow(durableRows.ceiling(durableTwo, WORKER_CONCURRENCY, 2, bareTwo));
  // The 1-worker rate the rows below compare with: the median of the rounds' rates, as the bare
  // worker's above (the round with the median ratio to a ceiling may be a slow minute of the machine).
  const oneWorkerRate = median(rounds.map((r) => r.delivery.herald.rate));
  const rssOne = Math.max(...rounds.map((r) => r.heraldPeakRssMb));
  addRow({
    scenario: '1 delivery-worker, callbacks/s vs raw POST loop (16)',
    figure: round(oneWorkerRate, 0),
    unit: 'callbacks/s',
    ceiling: raw16,
    ceilingName: 'raw POST loop 16',
  });

  // --- Delivery with 2 worker processes: drain the callbacks of one more ingest ---
  const ingest = (count: number, programId: string, merchantId: string | undefined, objectType: string): Promise<number> =>
    ingestBatches({
      apiUrl,
      token: INGEST_TOKEN,
      count,
      batchSize: SIZE.ingestBatch,
      inFlight: 2,
      programId,
      ...(merchantId ? { merchantId } : {}),
      objectType,
    });
  const startWorkers = (n: number): ServiceProcess[] => {
    const workers = Array.from({ length: n }, () => startService('services/delivery-worker/src/main.ts', env));
    workers.forEach((w, i) => {
      cleanups.push(async () => void (await w.stop('SIGTERM', 15_000)));
      serviceLogs.push([`delivery-worker ${n}.${i + 1}`, w]);
    });
    return workers;
  };
  const expected = 2 * SIZE.ingestEvents;
  await ingest(SIZE.ingestEvents, 'bench-p', 'bench-m', 'payment');
  await reset();
  const workers = startWorkers(2);
  const two = await drain(expected, workers, 'delivery-worker');
  const rssTwo = workers.map((w) => peakRssMb(w.child.pid));
  addRow({
    scenario: '2 delivery-workers, callbacks/s vs 1 worker',
    figure: round(two.rate, 0),
    unit: 'callbacks/s',
    ceiling: oneWorkerRate,
    ceilingName: '1 worker (median of the rounds)',
    target: '>= 1.6',
    note: busyNote(two),
    cpu: formatCpu(two.cpu),
  });
  addRow({
    scenario: '2 delivery-workers, callbacks/s vs raw POST loop (32)',
    figure: round(two.rate, 0),
    unit: 'callbacks/s',
    ceiling: raw32,
    ceilingName: 'raw POST loop 32',
  });
  addRow({
    scenario: '2 delivery-workers, callbacks/s vs 2 bare BullMQ worker processes + POST',
    figure: round(two.rate, 0),
    unit: 'callbacks/s',
    ceiling: bareTwo.rate,
    ceilingName: '2 bare BullMQ processes',
  });
  addRow(durableRows.herald(2, two, durableTwo));
  const attempts = Number((await prisma.$queryRaw<Array<{ n: bigint }>>`SELECT count(*) AS n FROM delivery_attempts`)[0]!.n);
  if (attempts < (SIZE.rounds + 1) * expected) throw new Error(`expected ${(SIZE.rounds + 1) * expected} recorded attempts, found ${attempts}`);

  // --- OAuth: one target, a 60 s token, callbacks spread over the 2 running workers ---
  await reset();
  await ingest(SIZE.oauthEvents, 'bench-o', undefined, 'subscription');
  const oauth = await drain(SIZE.oauthEvents, [], 'delivery-worker');
  const tokenRequests = (await stats()).tokens;
  addRow({
    scenario: `OAuth: token requests for ${SIZE.oauthEvents} callbacks (2 workers, ${round(oauth.seconds, 1)} s, 60 s token)`,
    figure: tokenRequests,
    unit: 'token requests',
    target: `${Math.ceil(Math.max(oauth.seconds, 1) / 60)} (1 per token lifetime)`,
  });

  // --- OAuth renewal: a short-lived token, callbacks at a fixed rate over several of its lifetimes ---
  // A token is reused until a tenth of its lifetime is left (packages/callback-auth), then renewed:
  // one request per renewal period, never two for one period, whatever the number of workers.
  const lifetime = SIZE.renewalLifetime;
  const renewalPeriod = lifetime * 0.9;
  await callJson('POST', `${apiUrl}/admin/programs`, { token: ADMIN_TOKEN, body: { id: 'bench-r', name: 'renewal' }, expect: [201] });
  await callJson('PUT', `${apiUrl}/admin/programs/bench-r/notification-target?verify=false`, {
    token: ADMIN_TOKEN,
    body: {
      url: `${receiverUrl}/hook/renewal`,
      auth: { mode: 'oauth', authUrl: `${receiverUrl}/token/${lifetime}`, username: 'bench-client', password: 'bench-secret' },
    },
    expect: [200, 201],
  });
  await reset();
  const renewalCount = SIZE.renewalRate * SIZE.renewalSeconds;
  await postEventsAtRate(apiUrl, renewalCount, SIZE.renewalRate, (i) => ({
    programId: 'bench-r',
    origin: 'automated',
    eventType: 'updated',
    objectId: `renewal-${i}`,
    objectType: 'subscription',
  }));
  await drain(renewalCount, []);
  const renewal = await stats();
  const tokenSpan = (renewal.lastCallbackAt - (renewal.tokenTimes[0] ?? renewal.lastCallbackAt)) / 1000;
  const gaps = renewal.tokenTimes.slice(1).map((at, i) => (at - renewal.tokenTimes[i]!) / 1000);
  addRow({
    scenario: `OAuth renewal: token requests over ${round(tokenSpan, 1)} s of callbacks (${SIZE.renewalRate}/s, 2 workers), ${lifetime} s token`,
    figure: renewal.tokens,
    unit: 'token requests',
    target: `${1 + Math.floor(tokenSpan / renewalPeriod)} (1 per ${round(renewalPeriod, 1)} s renewal period)`,
    note: gaps.length > 0 ? `gaps between token requests ${round(Math.min(...gaps), 2)}-${round(Math.max(...gaps), 2)} s` : 'one token',
  });

  // --- End-to-end latency at a fixed moderate rate (2 workers running) ---
  await reset();
  const e2eCount = SIZE.e2eRate * SIZE.e2eSeconds;
  const answeredAt = new Map<string, number>();
  const e2eCpu = cpu.snapshot();
  const sentAt = await postEventsAtRate(
    apiUrl,
    e2eCount,
    SIZE.e2eRate,
    (i) => ({ programId: 'bench-p', origin: 'api', eventType: 'created', objectId: `e2e-${i}`, objectType: 'subscription' }),
    answeredAt,
  );
  await drain(e2eCount, []);
  const e2eCpuAfter = cpu.snapshot();
  const arrivals = (await callJson('GET', `${receiverUrl}/arrivals`)) as Record<string, number>;
  const latencies = [...sentAt]
    .map(([eventId, at]) => (arrivals[eventId] ?? NaN) - at)
    .filter(Number.isFinite)
    .sort((a, b) => a - b);
  if (latencies.length !== e2eCount) throw new Error(`latency: ${latencies.length} of ${e2eCount} callbacks matched`);
  for (const p of [50, 95, 99]) {
    addRow({ scenario: `end-to-end ingest -> receiver p${p} at ${SIZE.e2eRate} events/s (2 workers)`, figure: percentile(latencies, p), unit: 'ms' });
  }
  // Where the tail comes from: the ingest request itself, or the delivery after its 201 (which
  // includes any wait the target gate imposed: a deferral is 50 ms or more).
  const ingestTimes = [...sentAt].map(([eventId, at]) => answeredAt.get(eventId)! - at).sort((a, b) => a - b);
  const afterAnswer = [...answeredAt]
    .map(([eventId, at]) => (arrivals[eventId] ?? NaN) - at)
    .filter(Number.isFinite)
    .sort((a, b) => a - b);
  const [e2eDeferred] = await prisma.$queryRaw<
    Array<{ n: bigint }>
  >`SELECT coalesce(sum(d.deferrals), 0) AS n FROM deliveries d JOIN events e ON e.id = d.event_id WHERE e.object_id LIKE 'e2e-%'`;
  addRow({
    scenario: `end-to-end at ${SIZE.e2eRate} events/s: ingest request -> 201 p99, 201 -> receiver p99`,
    figure: percentile(ingestTimes, 99),
    unit: 'ms',
    note: `201 -> receiver p99 ${percentile(afterAnswer, 99)} ms; ${e2eDeferred!.n} deferrals by the target gate; CPU per event: ${cpuPerUnit(e2eCpu, e2eCpuAfter, e2eCount)}; the machine's cores ${Math.round(machineBusy(e2eCpu, e2eCpuAfter) * 100)} % busy`,
  });
  const rssUnderLoad = Math.max(rssOne, ...rssTwo, ...workers.map((w) => peakRssMb(w.child.pid)));
  for (const w of workers) await w.stop('SIGTERM', 15_000);
  addRow({ scenario: 'peak RSS of a delivery-worker under load (VmHWM)', figure: rssUnderLoad, unit: 'MB', target: '< 200 MB' });

  // --- Isolation: hanging, slow and bursting merchants beside a healthy one ---
  await isolation();

  // --- GET /events on many events, seeded with SQL ---
  log(`seeding ${SIZE.listEvents} events`);
  const seedStarted = performance.now();
  await callJson('POST', `${apiUrl}/admin/programs`, { token: ADMIN_TOKEN, body: { id: 'bench-l', name: 'list' }, expect: [201] });
  for (let m = 0; m < 4; m += 1)
    await callJson('POST', `${apiUrl}/admin/merchants`, {
      token: ADMIN_TOKEN,
      body: { id: `bench-l-m${m}`, programId: 'bench-l', name: 'list' },
      expect: [201],
    });
  const { key } = (await callJson('POST', `${apiUrl}/admin/api-keys`, { token: ADMIN_TOKEN, body: { merchantId: 'bench-l-m0' }, expect: [201] })) as {
    key: string;
  };
  await seedEvents(prisma, SIZE.listEvents);
  log(`seeded in ${round((performance.now() - seedStarted) / 1000, 1)} s`);

  const listHeaders = {
    'x-api-key': key,
    'content-type': 'application/json',
    'accept-language': 'en-US',
    'user-agent': 'herald-bench',
    origin: 'https://bench.example',
  };
  const perMerchant = SIZE.listEvents / 4;
  const check = async (query: string, expectCount: number): Promise<string> => {
    const { status, body: text } = await requestJson('GET', `${apiUrl}/events?${query}`, { headers: listHeaders });
    if (status !== 200) throw new Error(`GET /events?${query} answered ${status}: ${text.slice(0, 300)}`);
    const body = JSON.parse(text) as { count: number; data: unknown[] };
    if (body.count !== expectCount || body.data.length !== 20)
      throw new Error(`GET /events?${query}: count ${body.count} (expected ${expectCount}), ${body.data.length} items`);
    return text;
  };
  const page1 = await check('page=1&pageSize=20', perMerchant);
  await check('origin=api&objectType=payment&page=1&pageSize=20', filteredCount(SIZE.listEvents));
  await check(`page=${SIZE.deepPage}&pageSize=20`, perMerchant);

  // Page 1 beside its two ceilings, in alternated rounds (bench/paired-rounds.ts).
  const listCeilings = await startListCeilings({ databaseUrl, page: page1, expectCount: perMerchant, startListening });
  const listRoundResults = await listRounds(
    { herald: `${apiUrl}/events?page=1&pageSize=20`, ...listCeilings },
    listHeaders,
    SIZE.rounds,
    SIZE.listRoundSeconds,
  );
  for (const row of listRoundRows(listRoundResults, { events: SIZE.listEvents, pageBytes: page1.length })) addRow(row);
  const page1P99 = medianRound(listRoundResults, 'static', (r) => r.rps).round.herald.p99;
  // The other pages, once each, against page 1 of the rounds.
  const staticRps = median(listRoundResults.map((r) => r.static.rps));
  const pages: Array<[string, string]> = [
    ['filtered page 1 (origin=api, objectType=payment)', 'origin=api&objectType=payment&page=1&pageSize=20'],
    [`page ${SIZE.deepPage}`, `page=${SIZE.deepPage}&pageSize=20`],
  ];
  for (const [name, query] of pages) {
    const r = await cannon(`${apiUrl}/events?${query}`, SIZE.listSeconds, listHeaders);
    addRow({
      scenario: `GET /events ${name}, ${SIZE.listEvents} events, req/s`,
      figure: round(r.rps, 0),
      unit: 'req/s',
      ceiling: staticRps,
      ceilingName: 'bare Express (median of the rounds)',
      note: `p50 ${r.p50} ms, p99 ${r.p99} ms`,
    });
    if (name.startsWith('page ')) {
      addRow({ scenario: `GET /events ${name} p99 / page 1 p99`, figure: r.p99, unit: 'ms p99', ceiling: page1P99, ceilingName: 'page 1 p99', target: '<= 3' });
    }
  }

  await apiIsolation({ databaseUrl, queuePrefix, prisma });
  // --- Soak (full run only): steady delivery with retries for SOAK.seconds ---
  if (!QUICK) await soak();
  report(runStarted);
}

// --- API isolation: one key's 32 expensive reads beside another tenant (bench/api-isolation.ts) ---
async function apiIsolation(context: { databaseUrl: string; queuePrefix: string; prisma: PrismaClient }): Promise<void> {
  // An events-api of its own, on the default settings but the rate limit (as every bench API).
  const api = await startListening('services/events-api/src/server.ts', {
    ...serviceEnv({ databaseUrl: context.databaseUrl, redisUrl: REDIS_URL, queuePrefix: context.queuePrefix }),
    PORT: '0',
  });
  serviceLogs.push(['events-api (isolation)', api.proc]);
  const noisyEvents = QUICK ? 100_000 : 1_000_000;
  const r = await runApiIsolation({
    apiUrl: `http://127.0.0.1:${api.port}`,
    adminToken: ADMIN_TOKEN,
    ingestToken: INGEST_TOKEN,
    prisma: context.prisma,
    noisyEvents,
    seconds: QUICK ? 8 : 20,
    log,
  });
  await api.proc.stop('SIGTERM', 15_000);
  const scenario = `API isolation, 1 key x 32 loops of GET /events?${r.noisy.query} over ${noisyEvents} events`;
  const statuses = (counts: Record<string, number>): string =>
    Object.entries(counts)
      .map(([status, n]) => `${n} x ${status}`)
      .join(', ');
  addRow({
    scenario: `${scenario}: another tenant's GET /events p99`,
    figure: r.quiet.p99,
    unit: 'ms',
    target: '<= 250 ms',
    note: `p50 ${r.quiet.p50} ms; alone p50 ${r.quietAlone.p50} ms, p99 ${r.quietAlone.p99} ms; ${r.quiet.requests} requests at 20/s`,
  });
  addRow({ scenario: `${scenario}: another tenant's 503s`, figure: r.quiet.statuses['503'] ?? 0, unit: '503s', target: '0', note: statuses(r.quiet.statuses) });
  addRow({
    scenario: `${scenario}: /readyz answers other than 200`,
    figure: r.readyz.polls - (r.readyz.statuses['200'] ?? 0),
    unit: 'polls',
    target: '0',
    note: `${r.readyz.polls} polls: ${statuses(r.readyz.statuses)}`,
  });
  addRow({
    scenario: `${scenario}: ingest p99 (single events, 5/s)`,
    figure: r.ingest.p99,
    unit: 'ms',
    note: `p50 ${r.ingest.p50} ms; ${statuses(r.ingest.statuses)}`,
  });
  addRow({
    scenario: `${scenario}: the noisy key's answers`,
    figure: round((r.noisy.statuses['200'] ?? 0) / r.noisy.seconds, 1),
    unit: '200s/s',
    note: statuses(r.noisy.statuses),
  });
  addRow({
    scenario: `API isolation: the issue's GET /events?createdFrom=1970-01-01T00:00:00Z&page=9999&pageSize=100 alone, ${noisyEvents} events`,
    figure: r.issueQuery.ms,
    unit: 'ms',
    note: `answered ${r.issueQuery.status}`,
  });
}

/** Writes the results file and prints the table. */
function report(runStarted: number): void {
  const commit = MEASURED_COMMIT;
  const result = {
    date: new Date().toISOString(),
    mode: MODE,
    commit,
    durationSeconds: round((Date.now() - runStarted) / 1000, 1),
    machine: {
      os: `${os.type()} ${os.release()} ${os.arch()}`,
      cpus: os.cpus().map((c) => ({ model: c.model, speedMHz: c.speed })),
      cpuCount: os.cpus().length,
      totalMemoryMB: Math.round(os.totalmem() / 2 ** 20),
      freeMemoryMB: Math.round(os.freemem() / 2 ** 20),
      loadAverage: os.loadavg(),
      node: process.version,
    },
    sizes: SIZE,
    workerConcurrency: WORKER_CONCURRENCY,
    results: rows,
  };
  writeFileSync(path.join(ROOT, `bench/results/${SCALE ? 'latest-scale' : ONLY ? `latest-${ONLY}` : 'latest'}.json`), `${JSON.stringify(result, null, 2)}\n`);
  printTable(result.date, commit);
}

function gitCommit(): string {
  try {
    const head = execSync('git rev-parse --short HEAD', { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execSync('git status --porcelain', { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
    return dirty ? `${head}+uncommitted` : head;
  } catch {
    return 'unknown';
  }
}

function printTable(date: string, commit: string): void {
  const lines = rows.map((r) => [
    r.scenario,
    `${r.figure} ${r.unit}`,
    r.ratio !== undefined ? `${r.ratio} of ${r.ceilingName}` : '',
    r.target ?? '',
    r.note ?? '',
  ]);
  const head = ['scenario', 'figure', 'ratio', 'target', 'note'];
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(`Herald bench (${MODE}), ${date}, commit ${commit}, ${os.cpus().length} cpus, node ${process.version}`);
  console.log(fmt(head));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const l of lines) console.log(fmt(l));
}

async function cleanup(): Promise<void> {
  rawPoster.close();
  // In reverse: processes first, then Redis keys and the database they used.
  for (const fn of cleanups.reverse()) {
    try {
      await fn();
    } catch (error) {
      log(`cleanup: ${(error as Error).message}`);
    }
  }
  cleanups.length = 0;
}

let interrupted = false;
// Whatever escapes main() still stops the processes and drops the database before exiting.
for (const event of ['unhandledRejection', 'uncaughtException'] as const) {
  process.once(event, (error: unknown) => {
    log(`FAILED (${event}): ${(error as Error)?.stack ?? String(error)}`);
    void cleanup().finally(() => process.exit(1));
  });
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    log(`${signal}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}
// The whole run is bounded: a hang past this fails the run (after cleaning up).
const watchdog = setTimeout(
  () => {
    log('run exceeded its time limit');
    void cleanup().finally(() => process.exit(1));
  },
  SCALE ? 45 * 60_000 : (QUICK ? 9 * 60_000 : 20 * 60_000) + (ONLY === 'soak' || (!QUICK && ONLY === undefined) ? SOAK.seconds * 1000 + 3 * 60_000 : 0),
);

main()
  .then(async () => {
    await cleanup();
    clearTimeout(watchdog);
    process.exit(0);
  })
  .catch(async (error: unknown) => {
    if (interrupted) return;
    log(`FAILED: ${(error as Error).stack ?? String(error)}`);
    for (const [name, proc] of serviceLogs) {
      const errors = proc
        .output()
        .split('\n')
        .filter((line) => /"level":"error"/.test(line))
        .slice(-5);
      if (errors.length > 0) log(`${name} errors:\n${errors.join('\n')}`);
    }
    await cleanup();
    clearTimeout(watchdog);
    process.exit(1);
  });
