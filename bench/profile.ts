/**
 * A small profiling harness for the events-api and the delivery-worker, quicker to repeat than
 * `pnpm bench`:
 *
 *   node --import tsx bench/profile.ts ingest [--rounds 3] [--events 15000] [--cpu-prof]
 *   node --import tsx bench/profile.ts list [--events 1000000] [--seconds 10] [--keep-db NAME] [--cpu-prof]
 *   node --import tsx bench/profile.ts deliver [--events 5000] [--workers 1] [--durable] [--build] [--cpu-prof] [--set NAME=VALUE]
 *   node --import tsx bench/profile.ts e2e [--rate 100] [--seconds 10] [--workers 1] [--build]
 *
 * `ingest` runs the bench's ingest loop (batches of 500, 2 in flight, fan-out 2) several times,
 * then the same rows and jobs written the bare way (the ingest ceiling of bench/run.ts).
 * `list` seeds events like the bench and runs autocannon on page 1 and on the bare Express page.
 * `deliver` ingests payment events (fan-out 2) with no worker running, then starts the workers and
 * times the drain at bench/receiver.ts, with the CPU time each process spent per callback;
 * `--durable` first drains as many callbacks with the durable delivery ceiling (bench/ceilings.ts),
 * so that Herald's figure has its ratio to a ceiling of the same run, and sets the CPU per callback
 * of all processes against the ceiling's, role by role (bench/cpu.ts); `--build` runs the services
 * from the production build, as the bench does (the workers' peak RSS is then production's).
 * `e2e` posts single events at a fixed rate to running workers, as the bench's end-to-end latency
 * section does, after a second of the same load to warm them up, and prints the latency from each
 * ingest request to its callback's arrival. `--build` runs the events-api and the workers from
 * the production build.
 * `--cpu-prof` writes a V8 profile of the events-api (of the first worker, with `deliver`) to
 * bench/results/profiles/ and prints the functions with the most self time; with `deliver
 * --durable` it profiles the ceiling's first process too and prints both sides' self time per
 * package in µs per callback, over their drains only, and with `list` bare Express + the same SQL,
 * in µs per request of page 1: where Herald's own overhead is. `--keep-db NAME`
 * reuses (or creates and keeps) a seeded database. `--set NAME=VALUE` (repeatable) gives the workers
 * a setting other than the bench's, for an A/B of it (`--set TARGET_MAX_IN_FLIGHT=0`).
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { applyMigrations, dropDatabase, ensureDatabase } from '@herald/db';
import { createPrismaClient } from '@herald/db/prisma';
import { callJson, databaseUrlFor, lastRead, requestJson, waitFor, startService, uniqueId, type ServiceProcess } from '@herald/testing';
import { buildAll } from '../scripts/build';
import { CpuAccounts, cpuAgainst, cpuByRole, cpuPerUnit, formatCpu, machineBusy, type CpuSnapshot } from './cpu';
import { durableDeliveryCeiling, pageOneQuery, startBareSqlPage, type DrainResult } from './ceilings';
import { bareIngest, DEV_PAYMENT_LOAD, ingestBatches } from './ingest-load';
import { postJson } from './post-json';
import { seedEvents } from './seed-events';
import { createPaymentTenant, serviceEnv, startHerald } from './setup';

const ROOT = path.resolve(__dirname, '..');
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const mode = process.argv[2];
const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const cpuProf = process.argv.includes('--cpu-prof');
/** The workers' settings given with `--set NAME=VALUE`. */
const workerSettings: Record<string, string> = Object.fromEntries(
  process.argv.flatMap((value, i) => (process.argv[i - 1] === '--set' ? [value.split(/=(.*)/s).slice(0, 2)] : [])),
);
const profileDir = path.join(ROOT, 'bench/results/profiles');
/** The environment that makes a service write a V8 profile of its whole life to profileDir. */
const profiling = { NODE_OPTIONS: `--require ${path.join(ROOT, 'bench/cpu-profile-hook.cjs')}`, CPU_PROFILE_DIR: profileDir };

async function main(): Promise<void> {
  const keep = arg('keep-db', '');
  const id = uniqueId('prof').toLowerCase();
  const databaseName = keep || `herald_${id}`;
  const databaseUrl = databaseUrlFor(databaseName);
  const queuePrefix = `herald_${id}`;
  await ensureDatabase(databaseUrl);
  await applyMigrations(databaseUrl);
  const prisma = createPrismaClient(databaseUrl, { maxConnections: 2 });
  let api: ServiceProcess | undefined;
  try {
    mkdirSync(profileDir, { recursive: true });
    const env = serviceEnv({ databaseUrl, redisUrl: REDIS_URL, queuePrefix });
    // With --build the services run from the production build, as in the bench.
    const fromBuild = process.argv.includes('--build');
    if (fromBuild) await buildAll(['api', 'worker']);
    const apiScript = 'services/events-api/src/server.ts';
    api = startHerald(apiScript, fromBuild, { ...env, PORT: '0', ...(cpuProf && mode !== 'deliver' ? profiling : {}) });
    const port = Number((await api.waitForLog(/listening/, 30_000)).port);
    cpu = new CpuAccounts(databaseName);
    cpu.add(api.child.pid, 'events-api');
    const apiUrl = `http://127.0.0.1:${port}`;
    if (mode === 'ingest') await profileIngest(apiUrl, databaseUrl, queuePrefix);
    else if (mode === 'list') await profileList(apiUrl, api.child.pid!, databaseUrl, prisma, Boolean(keep));
    else if (mode === 'deliver') await profileDelivery(apiUrl, { ...env, ...(cpuProf ? profiling : {}) }, prisma, databaseUrl, queuePrefix);
    else if (mode === 'e2e') await profileLatency(apiUrl, env, prisma);
    else throw new Error('mode: ingest, list, deliver or e2e');
  } finally {
    if (api) {
      await api.stop('SIGTERM', 30_000);
      const errors = api
        .output()
        .split('\n')
        .filter((l) => /"level":"(error|warn)"/.test(l));
      if (errors.length) console.log(errors.slice(-5).join('\n'));
    }
    await prisma.$disconnect();
    await deleteKeys(queuePrefix);
    if (!keep) await dropDatabase(databaseUrl);
  }
  if (cpuProf) summariseLatestProfile();
  if (cpuProf && profiledWindows.length > 1) compareProfiles(mode === 'list' ? 'request' : 'callback');
}

async function profileIngest(apiUrl: string, databaseUrl: string, queuePrefix: string): Promise<void> {
  // Nothing delivers here: the targets' port 9 is never called.
  await createPaymentTenant(apiUrl, 'dev-admin-token', 'http://127.0.0.1:9/hook');
  const events = Number(arg('events', '15000'));
  const rounds = Number(arg('rounds', '3'));
  for (let r = 0; r < rounds; r += 1) {
    const before = cpu.snapshot();
    const rate = await ingestBatches({
      ...DEV_PAYMENT_LOAD,
      apiUrl,
      count: events,
      idPrefix: `r${r}-`,
    });
    console.log(`ingest round ${r + 1}: ${Math.round(rate)} events/s; CPU per event: ${cpuPerUnit(before, cpu.snapshot(), events)}`);
  }
  if (process.argv.includes('--bare')) {
    for (let r = 0; r < rounds; r += 1) {
      const before = cpu.snapshot();
      const bare = await bareIngest({
        databaseUrl,
        redisUrl: REDIS_URL,
        queuePrefix: `${queuePrefix}_bare`,
        count: events,
        batchSize: 500,
        inFlight: 2,
        programId: 'bench-p',
        merchantId: 'bench-m',
      });
      console.log(`bare ingest round ${r + 1}: ${Math.round(bare)} events/s; CPU per event: ${cpuPerUnit(before, cpu.snapshot(), events)}`);
    }
  }
}

/** The query of page 1, as the bench and the same-SQL ceiling ask for it. */
const PAGE_ONE = 'page=1&pageSize=20';

async function profileList(apiUrl: string, apiPid: number, databaseUrl: string, prisma: ReturnType<typeof createPrismaClient>, keep: boolean): Promise<void> {
  const total = Number(arg('events', '1000000'));
  const seeded = Number((await prisma.$queryRaw<Array<{ n: bigint }>>`SELECT count(*) AS n FROM events`)[0]!.n);
  if (!keep || seeded === 0) {
    await callJson('POST', `${apiUrl}/admin/programs`, { token: 'dev-admin-token', body: { id: 'bench-l', name: 'list' } });
    for (let m = 0; m < 4; m += 1)
      await callJson('POST', `${apiUrl}/admin/merchants`, { token: 'dev-admin-token', body: { id: `bench-l-m${m}`, programId: 'bench-l', name: 'list' } });
    const started = performance.now();
    await seedEvents(prisma, total);
    console.log(`seeded ${total} in ${Math.round(performance.now() - started)} ms`);
  }
  const { key } = (await callJson('POST', `${apiUrl}/admin/api-keys`, { token: 'dev-admin-token', body: { merchantId: 'bench-l-m0' } })) as { key: string };
  const headers = {
    'x-api-key': key,
    'content-type': 'application/json',
    'accept-language': 'en-US',
    'user-agent': 'herald-bench',
    origin: 'https://bench.example',
  };
  const page1 = (await requestJson('GET', `${apiUrl}/events?page=1&pageSize=20`, { headers })).body;
  const pageFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'herald-prof-')), 'page.json');
  writeFileSync(pageFile, page1);
  const bare = startService('bench/bare-express.ts', { BENCH_PAGE_FILE: pageFile });
  const barePort = Number((await bare.waitForLog(/listening/, 30_000)).port);
  // The same-run ceiling of Herald's own overhead: its page-1 statement in a bare Express handler.
  const bareSqlProcesses: ServiceProcess[] = [];
  const bareSqlUrl = await startBareSqlPage({
    databaseUrl,
    query: pageOneQuery('bench-l', 'bench-l-m0'),
    expectCount: JSON.parse(page1).count,
    startListening: async (script, env) => {
      const proc = startService(script, { ...env, ...(cpuProf ? profiling : {}) });
      bareSqlProcesses.push(proc);
      cpu.add(proc.child.pid, 'bare Express + SQL');
      return { port: Number((await proc.waitForLog(/listening/, 30_000)).port) };
    },
  });
  const seconds = Number(arg('seconds', '10'));
  // With --cpu-prof, page 1's windows of the events-api and of bare Express + SQL (which runs
  // page 1's statement whatever the query) are set against each other by compareProfiles.
  const cannon = async (url: string, profiled?: { role: string; pid: number }) => {
    const before = cpu.snapshot();
    const from = monotonicMicros();
    const r = await autocannon({ url, connections: 32, duration: seconds, headers });
    if (profiled) profiledWindows.push({ ...profiled, from, to: monotonicMicros(), units: r.requests.total });
    console.log(`  CPU per request: ${cpuPerUnit(before, cpu.snapshot(), r.requests.total)}`);
    if (r.non2xx || r.errors) throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
    return `${Math.round(r.requests.average)} req/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms`;
  };
  try {
    for (const query of arg('queries', PAGE_ONE).split(',')) {
      const pageOne = cpuProf && query === PAGE_ONE && profiledWindows.length === 0;
      console.log(`bare:   ${await cannon(`http://127.0.0.1:${barePort}/events`)}`);
      console.log(
        `bare Express + SQL: ${await cannon(bareSqlUrl, pageOne ? { role: 'bare Express + SQL', pid: bareSqlProcesses[0]!.child.pid! } : undefined)}`,
      );
      console.log(`${query}: ${await cannon(`${apiUrl}/events?${query}`, pageOne ? { role: 'events-api', pid: apiPid } : undefined)}`);
    }
  } finally {
    await bare.stop();
    for (const proc of bareSqlProcesses) await proc.stop();
  }
}

/**
 * `deliver`: payment events (fan-out 2) ingested with no worker running, then `--workers` worker
 * processes (the first one profiled with --cpu-prof) drain them to bench/receiver.ts.
 */
async function profileDelivery(
  apiUrl: string,
  workerEnv: Record<string, string>,
  prisma: ReturnType<typeof createPrismaClient>,
  databaseUrl: string,
  queuePrefix: string,
): Promise<void> {
  const receiver = startService('bench/receiver.ts', {});
  const receiverUrl = `http://127.0.0.1:${Number((await receiver.waitForLog(/listening/, 30_000)).port)}`;
  cpu.add(receiver.child.pid, 'receiver');
  const workers: ServiceProcess[] = [];
  let statsRedis: Redis | undefined;
  const workerScript = 'services/delivery-worker/src/main.ts';
  let ceilingProcesses = 0;
  let durable: DrainResult | undefined;
  try {
    await createPaymentTenant(apiUrl, 'dev-admin-token', `${receiverUrl}/hook`);
    const events = Number(arg('events', '5000'));
    const expected = 2 * events;
    const count = Number(arg('workers', '1'));
    if (process.argv.includes('--durable')) {
      durable = await durableDeliveryCeiling({
        databaseUrl,
        redisUrl: REDIS_URL,
        url: `${receiverUrl}/hook/durable`,
        prefix: `${queuePrefix}_bare`,
        concurrency: 16,
        total: expected,
        processes: count,
        programId: 'bench-p',
        merchantId: 'bench-m',
        drain: (total, processes) => drainAtReceiver(receiverUrl, total, processes, 'bare durable worker'),
        // With --cpu-prof the ceiling's first process is profiled too, for compareProfiles.
        startProcess: (script, env) => startService(script, { ...env, ...(cpuProf && ceilingProcesses++ === 0 ? profiling : {}) }),
      });
      console.log(`durable ceiling, ${count} process(es): ${Math.round(durable.rate)} callbacks/s\n  CPU per callback: ${formatCpu(durable.cpu)}`);
      await callJson('POST', `${receiverUrl}/reset`);
    }
    await ingestBatches({
      ...DEV_PAYMENT_LOAD,
      apiUrl,
      count: events,
    });
    const xacts = async (): Promise<number> =>
      Number((await prisma.$queryRaw<Array<{ n: bigint }>>`SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()`)[0]!.n);
    // Statements and commands per callback: how well the worker's batching works. Redis counts every client of the server.
    statsRedis = new Redis(REDIS_URL);
    const redisCalls = async (): Promise<number> => Number(/total_commands_processed:(\d+)/.exec(await statsRedis!.info('stats'))![1]);
    // Each asked once before the drain: their first call (the Prisma client's start, a connection)
    // must not land in the measured window, on this process's CPU and the machine's.
    await Promise.all([xacts(), redisCalls()]);
    for (let i = 0; i < count; i += 1) {
      const worker = startHerald(workerScript, process.argv.includes('--build'), {
        WORKER_CONCURRENCY: '16',
        ...workerEnv,
        ...workerSettings,
        ...(i > 0 ? { NODE_OPTIONS: '' } : {}),
      });
      workers.push(worker);
      cpu.add(worker.child.pid, 'delivery-worker');
    }
    await Promise.all(workers.map((w) => w.waitForLog('delivery-worker ready', 30_000)));
    const stats = async (): Promise<number> => (await callJson<{ callbacks: number }>('GET', `${receiverUrl}/stats`)).callbacks;
    let first: { at: number; callbacks: number; cpu: CpuSnapshot; xacts: number; redisCalls: number; clock: number } | undefined;
    const read = async (): Promise<number> => {
      const callbacks = await stats();
      if (!first && callbacks > 0)
        first = { at: performance.now(), callbacks, cpu: cpu.snapshot(), xacts: await xacts(), redisCalls: await redisCalls(), clock: monotonicMicros() };
      return callbacks;
    };
    {
      const callbacks = await waitFor(read, (n) => first !== undefined && n >= expected, 300_000, `${expected} callbacks`, 50);
      if (first) {
        const seconds = (performance.now() - first.at) / 1000;
        const done = callbacks - first.callbacks;
        profiledWindows.push({ role: 'delivery-worker', pid: workers[0]!.child.pid!, from: first.clock, to: monotonicMicros(), units: done / count });
        const rss = workers
          .map((w) => /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${w.child.pid}/status`, 'utf8'))?.[1])
          .map((kb) => `${Math.round(Number(kb) / 1024)} MB`);
        console.log(`${count} worker(s): ${Math.round(done / seconds)} callbacks/s (${done} in ${seconds.toFixed(1)} s), peak RSS ${rss.join(', ')}`);
        const heraldCpu = cpuByRole(first.cpu, cpu.snapshot(), done);
        console.log(`  CPU per callback: ${formatCpu(heraldCpu)}`);
        if (durable) console.log(`  against the durable ceiling: ${cpuAgainst({ cpu: heraldCpu, role: 'delivery-worker' }, durable)}`);
        const perCallback = (n: number): string => (n / done).toFixed(3);
        console.log(
          `  per callback: ${perCallback((await xacts()) - first.xacts)} PostgreSQL transactions, ${perCallback((await redisCalls()) - first.redisCalls)} Redis commands (whole server)`,
        );
      }
    }
    const attempts = Number((await prisma.$queryRaw<Array<{ n: bigint }>>`SELECT count(*) AS n FROM delivery_attempts`)[0]!.n);
    if (attempts !== expected) throw new Error(`${attempts} attempt rows for ${expected} callbacks`);
    // Jobs the target gate sent away to wait (a target at its limit): each costs a trip through the delayed set.
    const [deferred] = await prisma.$queryRaw<
      Array<{ deferrals: bigint; deliveries: bigint }>
    >`SELECT coalesce(sum(deferrals), 0) AS deferrals, count(*) FILTER (WHERE deferrals > 0) AS deliveries FROM deliveries`;
    console.log(`  target gate: ${deferred!.deferrals} deferrals, of ${deferred!.deliveries} deliveries`);
  } finally {
    for (const worker of workers) await worker.stop('SIGTERM', 30_000);
    await receiver.stop();
    statsRedis?.disconnect();
  }
}

/**
 * `e2e`: `--workers` running workers, single events of bench-p (one callback each) posted at
 * `--rate` per second for `--seconds`; the time from sending each ingest request to its callback's
 * first arrival at bench/receiver.ts, by percentile.
 */
async function profileLatency(apiUrl: string, workerEnv: Record<string, string>, prisma: ReturnType<typeof createPrismaClient>): Promise<void> {
  const receiver = startService('bench/receiver.ts', {});
  const receiverUrl = `http://127.0.0.1:${Number((await receiver.waitForLog(/listening/, 30_000)).port)}`;
  const workers: ServiceProcess[] = [];
  const workerScript = 'services/delivery-worker/src/main.ts';
  try {
    await createPaymentTenant(apiUrl, 'dev-admin-token', `${receiverUrl}/hook`);
    for (let i = 0; i < Number(arg('workers', '1')); i += 1) {
      workers.push(startHerald(workerScript, process.argv.includes('--build'), { WORKER_CONCURRENCY: '16', ...workerEnv, ...workerSettings }));
    }
    for (const w of workers) cpu.add(w.child.pid, 'delivery-worker');
    cpu.add(receiver.child.pid, 'receiver');
    await Promise.all(workers.map((w) => w.waitForLog('delivery-worker ready', 30_000)));
    const rate = Number(arg('rate', '100'));
    // A second of the same load first, not measured: the first requests of a process pay for its
    // lazy initialisation and the JIT, which the bench's own run has paid long before its latency section.
    for (let i = 0; i < rate; i += 1) {
      await callJson('POST', `${apiUrl}/internal/events`, {
        token: 'dev-ingest-token',
        body: { id: `Event-${randomUUID()}`, programId: 'bench-p', origin: 'api', eventType: 'created', objectId: `warm-${i}`, objectType: 'subscription' },
      });
    }
    await waitFor(
      async () => (await callJson<{ callbacks: number }>('GET', `${receiverUrl}/stats`)).callbacks,
      (callbacks) => callbacks >= rate,
      30_000,
      'the warm-up callbacks',
      100,
    );
    await callJson('POST', `${receiverUrl}/reset`);
    const count = rate * Number(arg('seconds', '10'));
    const sentAt = new Map<string, number>();
    // When the events-api answered 201: the part of the latency that is the ingest's.
    const answeredAt = new Map<string, number>();
    const started = Date.now();
    // Each settled at once: a failed request is reported below, never as an unhandled rejection
    // that would end this process before it stops its services and drops its database.
    const requests: Array<Promise<unknown>> = [];
    const cpuBefore = cpu.snapshot();
    for (let i = 0; i < count; i += 1) {
      const wait = started + (i * 1000) / rate - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const id = `Event-${randomUUID()}`;
      sentAt.set(id, Date.now());
      requests.push(
        postJson(`${apiUrl}/internal/events`, 'dev-ingest-token', {
          id,
          programId: 'bench-p',
          origin: 'api',
          eventType: 'created',
          objectId: `e2e-${i}`,
          objectType: 'subscription',
        }).then(
          ({ status, text }) => {
            if (status !== 201) return new Error(`ingest answered ${status}: ${text.slice(0, 300)}`);
            answeredAt.set(id, Date.now());
            return undefined;
          },
          (error: unknown) => error,
        ),
      );
    }
    const failed = (await Promise.all(requests)).filter((result): result is Error => result instanceof Error);
    if (failed.length > 0) throw new Error(`${failed.length} of ${count} ingest requests failed, the first: ${failed[0]!.message}`);
    // Goes on after the time is up: a callback that never arrived is left out of the latencies.
    const arrivals = await waitFor(
      () => callJson<Record<string, number>>('GET', `${receiverUrl}/arrivals`),
      (arrived) => Object.keys(arrived).length >= count,
      60_000,
      'every callback',
      200,
    ).catch(lastRead<Record<string, number>>);
    const cpuAfter = cpu.snapshot();
    const latencies = [...sentAt]
      .map(([id, at]) => (arrivals[id] ?? NaN) - at)
      .filter(Number.isFinite)
      .sort((a, b) => a - b);
    const percentiles = (sorted: number[]): string =>
      [50, 95, 99].map((p) => `p${p} ${sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]} ms`).join(', ') +
      `, max ${sorted.at(-1)} ms`;
    const ingest = [...sentAt].map(([id, at]) => answeredAt.get(id)! - at).sort((a, b) => a - b);
    const delivery = [...answeredAt]
      .map(([id, at]) => (arrivals[id] ?? NaN) - at)
      .filter(Number.isFinite)
      .sort((a, b) => a - b);
    console.log(`${latencies.length} of ${count} callbacks at ${rate}/s, ingest request to callback: ${percentiles(latencies)}`);
    console.log(`  ingest request to its 201: ${percentiles(ingest)}; 201 to callback: ${percentiles(delivery)}`);
    console.log(`  CPU per event: ${cpuPerUnit(cpuBefore, cpuAfter, count)}; the machine's cores ${Math.round(machineBusy(cpuBefore, cpuAfter) * 100)} % busy`);
    // When the slowest arrived: a cluster points at something periodic (a sweep, a GC, a flush).
    const slowest = [...sentAt]
      .map(([id, sent]) => ({ sent: sent - started, latency: (arrivals[id] ?? NaN) - sent }))
      .sort((a, b) => b.latency - a.latency)
      .slice(0, 10);
    console.log(`slowest (ms after the start: latency): ${slowest.map((s) => `${s.sent}: ${s.latency}`).join(', ')}`);
    // Jobs the target gate sent back to wait (target busy, breaker open): each waited 50 ms or more.
    const [deferred] = await prisma.$queryRaw<
      Array<{ deliveries: bigint; deferrals: bigint }>
    >`SELECT count(*) FILTER (WHERE deferrals > 0) AS deliveries, coalesce(sum(deferrals), 0) AS deferrals FROM deliveries`;
    console.log(`deferred by the target gate: ${deferred!.deliveries} deliveries, ${deferred!.deferrals} deferrals`);
  } finally {
    for (const worker of workers) await worker.stop('SIGTERM', 30_000);
    await receiver.stop();
  }
}

/** The CPU accounts of this run's processes (set once the database is known). */
let cpu: CpuAccounts;

/**
 * A profiled process's measured load: its window on the monotonic clock and the units of work it
 * did there (a drain's callbacks per process, a page's requests), for compareProfiles.
 */
interface ProfiledWindow {
  role: string;
  pid: number;
  from: number;
  to: number;
  units: number;
}
const profiledWindows: ProfiledWindow[] = [];

/** Microseconds on the monotonic clock, the clock of V8's profile timestamps. */
const monotonicMicros = (): number => Number(process.hrtime.bigint() / 1000n);

/** The durable ceiling's drain (bench/ceilings.ts): its rate at the receiver and CPU per callback, from the first callback to the last. */
async function drainAtReceiver(receiverUrl: string, expected: number, processes: ServiceProcess[], role: string): Promise<DrainResult> {
  for (const p of processes) cpu.add(p.child.pid, role);
  const stats = async (): Promise<number> => (await callJson<{ callbacks: number }>('GET', `${receiverUrl}/stats`)).callbacks;
  let first: { at: number; callbacks: number; cpu: CpuSnapshot; clock: number } | undefined;
  const read = async (): Promise<number> => {
    const callbacks = await stats();
    if (!first && callbacks > 0) first = { at: performance.now(), callbacks, cpu: cpu.snapshot(), clock: monotonicMicros() };
    return callbacks;
  };
  const callbacks = await waitFor(read, (n) => first !== undefined && n >= expected, 300_000, `${role}: ${expected} callbacks`, 50);
  const seconds = (performance.now() - first!.at) / 1000;
  const done = callbacks - first!.callbacks;
  profiledWindows.push({ role, pid: processes[0]!.child.pid!, from: first!.clock, to: monotonicMicros(), units: done / processes.length });
  return { rate: done / seconds, seconds, cpu: cpuByRole(first!.cpu, cpu.snapshot(), done), role, busy: NaN };
}

async function deleteKeys(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
  redis.disconnect();
}

/** Prints the 25 functions with the most self time in the newest profile. */
function summariseLatestProfile(): void {
  const newest = readdirSync(profileDir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort()
    .pop();
  if (!newest) return;
  const profile = JSON.parse(readFileSync(path.join(profileDir, newest), 'utf8')) as {
    nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
    samples: number[];
  };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  for (const id of profile.samples) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const key = `${functionName || '(anonymous)'} ${url.replace(/.*node_modules\/\.pnpm\/[^/]+\/node_modules\//, '').replace(ROOT, '')}:${lineNumber}`;
    self.set(key, (self.get(key) ?? 0) + 1);
  }
  const total = profile.samples.length;
  // Self time per package (or node internals, native code, Herald's own files).
  const byPackage = new Map<string, number>();
  for (const id of profile.samples) {
    const pkg = packageOf(byId.get(id)!.callFrame);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + 1);
  }
  console.log(
    [...byPackage]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([k, n]) => `${k} ${((100 * n) / total).toFixed(1)}%`)
      .join(', '),
  );
  console.log(`profile ${newest}: ${total} samples`);
  // Inclusive time of each function (a sample counts once per distinct function on its stack).
  const parent = new Map<number, number>();
  for (const node of profile.nodes as Array<{ id: number; children?: number[] }>) for (const child of node.children ?? []) parent.set(child, node.id);
  const inclusive = new Map<string, number>();
  for (const id of profile.samples) {
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const { functionName, url, lineNumber } = byId.get(at)!.callFrame;
      if (!functionName) continue;
      seen.add(`${functionName} ${url.replace(/.*node_modules\/\.pnpm\/[^/]+\/node_modules\//, '').replace(ROOT, '')}:${lineNumber}`);
    }
    for (const key of seen) inclusive.set(key, (inclusive.get(key) ?? 0) + 1);
  }
  if (process.env.INCLUSIVE) {
    for (const [key, n] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.INCLUSIVE)))
      console.log(`incl ${((100 * n) / total).toFixed(1).padStart(5)}%  ${key}`);
  }
  for (const [key, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`${((100 * n) / total).toFixed(1).padStart(5)}%  ${key}`);
}

/** Where a profiled function lives: its npm package, node internals, Herald's own files, or what V8 calls it. */
function packageOf({ url, functionName }: { url: string; functionName: string }): string {
  return (
    /node_modules\/\.pnpm\/[^/]+\/node_modules\/((@[^/]+\/)?[^/]+)/.exec(url)?.[1] ??
    (url.startsWith('node:') ? 'node internals' : url.includes(ROOT) ? 'herald' : url ? url.slice(0, 30) : `(${functionName || 'native'})`)
  );
}

/**
 * `deliver --durable --cpu-prof` and `list --cpu-prof`: the self time per package of Herald's
 * process and of its ceiling's (the durable ceiling's worker, bare Express + the same SQL), in µs
 * per callback or request, from the samples taken in each one's measured window only (the start
 * of each process, its module loading and compiling, left out): where Herald's own overhead is.
 */
function compareProfiles(unit: 'callback' | 'request'): void {
  const files = readdirSync(profileDir);
  const sides = profiledWindows.flatMap((window) => {
    const file = files.find((f) => f.endsWith(`-${window.pid}.cpuprofile`));
    if (!file) return [];
    const profile = JSON.parse(readFileSync(path.join(profileDir, file), 'utf8')) as {
      nodes: Array<{ id: number; callFrame: { functionName: string; url: string } }>;
      samples: number[];
      timeDeltas: number[];
      startTime: number;
    };
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const micros = new Map<string, number>();
    let at = profile.startTime;
    profile.samples.forEach((id, i) => {
      at += profile.timeDeltas[i]!;
      if (at < window.from || at > window.to) return;
      const pkg = packageOf(byId.get(id)!.callFrame);
      // A sample stands for the time until the next one.
      micros.set(pkg, (micros.get(pkg) ?? 0) + (profile.timeDeltas[i + 1] ?? 0) / window.units);
    });
    micros.delete('((idle))');
    return [{ role: window.role, micros }];
  });
  if (sides.length < 2) return;
  const [herald, ceiling] = [sides.at(-1)!, sides[0]!];
  const total = (side: typeof herald): number => [...side.micros.values()].reduce((a, b) => a + b, 0);
  const rows = [...new Set([...herald.micros.keys(), ...ceiling.micros.keys()])]
    .map((pkg) => ({ pkg, ours: herald.micros.get(pkg) ?? 0, ceilings: ceiling.micros.get(pkg) ?? 0 }))
    .sort((x, y) => Math.abs(y.ours - y.ceilings) - Math.abs(x.ours - x.ceilings))
    .slice(0, 15);
  const cell = (n: number): string => n.toFixed(1).padStart(10);
  console.log(
    `\nself time per ${unit} under load, µs (V8 profiles of each side's first process):\n${'package'.padEnd(24)}${herald.role.padStart(18)}${ceiling.role.padStart(22)}  difference`,
  );
  for (const { pkg, ours, ceilings } of [{ pkg: 'busy, in all', ours: total(herald), ceilings: total(ceiling) }, ...rows]) {
    console.log(
      `${pkg.slice(0, 23).padEnd(24)}${cell(ours).padStart(18)}${cell(ceilings).padStart(22)}  ${(ours >= ceilings ? '+' : '') + (ours - ceilings).toFixed(1)}`,
    );
  }
}

// A reader that stops early (`… | head`) closes stdout: the rest of the output is dropped, and
// the run still stops its services and drops its database, instead of dying on EPIPE and leaving
// them running.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
});

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
