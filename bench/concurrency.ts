/**
 * `node --import tsx bench/concurrency.ts [--quick]`: what one callback in flight costs a
 * delivery-worker, to choose WORKER_CONCURRENCY's default from figures.
 *
 * Callbacks mostly wait on the network. For each concurrency level, a real delivery-worker process
 * (services/delivery-worker/src/main.ts) sends callbacks to a receiver that holds each request
 * open HOLD_MS before answering 200, so that the worker keeps `concurrency` callbacks in flight.
 * Measured per level: the worker's resident memory idle and while every slot is busy (the
 * difference divided by the callbacks in flight), its CPU time per callback, the callbacks per
 * second against the ideal `concurrency / hold`, the most PostgreSQL connections the worker held
 * (the delivery-worker opens a pool of 10), and any warning or error it logged.
 *
 * Everything runs on 127.0.0.1 with its own database (created, migrated, dropped), its own queue
 * prefix (keys deleted at the end) and its own receiver process; each level is bounded in count
 * (concurrency x ROUNDS callbacks) and in time. Prints a table, writes bench/results/concurrency.json.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { applyMigrations, dropDatabase, ensureDatabase } from '@herald/db';
import { callJson, databaseUrlFor, removeQueueKeys, startService, uniqueId, waitFor, type ServiceProcess } from '@herald/testing';
import { ingestBatches } from './ingest-load';
import { serviceEnv } from './setup';

const QUICK = process.argv.includes('--quick');
const ROOT = path.resolve(__dirname, '..');
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ADMIN_TOKEN = 'dev-admin-token';
const INGEST_TOKEN = 'dev-ingest-token';
const LEVELS = QUICK ? [16, 64, 256] : [16, 64, 128, 256, 512];
/** How long the receiver holds each callback before answering. */
const HOLD_MS = 1_500;
/** Callbacks per level, in units of the level's concurrency: every slot is refilled this many times. */
const ROUNDS = QUICK ? 3 : 5;
const LEVEL_TIMEOUT_MS = 60_000;
const APPLICATION_NAME = 'herald-bench-worker';

const log = (message: string): void => console.error(`[concurrency ${new Date().toISOString().slice(11, 19)}] ${message}`);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const round = (n: number, digits = 1): number => Number(n.toFixed(digits));

/** Resident memory (VmRSS) of a process, in MB. */
function rssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : NaN;
}

/** CPU time (user + system) a process has used, in ms. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.floor(sorted.length / 2)]!;
}

interface Level {
  concurrency: number;
  callbacks: number;
  idleRssMb: number;
  busyRssMb: number;
  peakRssMb: number;
  rssPerInFlightKb: number;
  cpuPerCallbackUs: number;
  callbacksPerSecond: number;
  idealPerSecond: number;
  /** Most callbacks the receiver held at once: the worker kept every slot busy when this is `concurrency`. */
  maxInFlight: number;
  maxDbConnections: number;
  errorLogLines: number;
}

const id = uniqueId('conc').toLowerCase();
const databaseUrl = databaseUrlFor(`herald_${id}`);
const queuePrefix = `herald_${id}`;
const processes: ServiceProcess[] = [];
const admin = new pg.Pool({ connectionString: databaseUrl, max: 1 });

/** Stops every process started (the receiver's held requests end with it), drops the database, removes the queue's keys. */
async function cleanup(): Promise<void> {
  for (const proc of processes.splice(0).reverse()) await proc.stop('SIGTERM', 15_000);
  await admin.end().catch(() => undefined);
  await dropDatabase(databaseUrl).catch((error: unknown) => log(`drop database: ${(error as Error).message}`));
  await removeQueueKeys(REDIS_URL, queuePrefix);
}

async function main(): Promise<void> {
  const started = (script: string, env: Record<string, string>): ServiceProcess => {
    const proc = startService(script, env);
    processes.push(proc);
    return proc;
  };
  try {
    await ensureDatabase(databaseUrl);
    await applyMigrations(databaseUrl);
    const receiver = started('bench/receiver.ts', {});
    const receiverUrl = `http://127.0.0.1:${Number((await receiver.waitForLog('listening')).port)}`;
    const env = serviceEnv({ databaseUrl, redisUrl: REDIS_URL, queuePrefix });
    const api = started('services/events-api/src/server.ts', { ...env, PORT: '0' });
    const apiUrl = `http://127.0.0.1:${Number((await api.waitForLog(/listening/, 30_000)).port)}`;
    await callJson('POST', `${apiUrl}/admin/programs`, { token: ADMIN_TOKEN, body: { id: 'bench-c', name: 'concurrency' }, timeoutMs: 30_000 });
    await callJson('PUT', `${apiUrl}/admin/programs/bench-c/notification-target`, {
      token: ADMIN_TOKEN,
      body: { url: `${receiverUrl}/slow/${HOLD_MS}/c`, auth: { mode: 'none' } },
      timeoutMs: 30_000,
    });

    const levels: Level[] = [];
    let sent = 0;
    for (const concurrency of LEVELS) {
      // The worker's connections are told apart from the API's by their application_name.
      const worker = started('services/delivery-worker/src/main.ts', {
        ...env,
        DATABASE_URL: `${databaseUrl}?application_name=${APPLICATION_NAME}`,
        WORKER_CONCURRENCY: String(concurrency),
      });
      const pid = worker.child.pid!;
      await worker.waitForLog('delivery-worker ready', 30_000);
      // Not a wait for an event: the idle figure is read a second after start-up, once start-up's garbage is behind it.
      await sleep(1_000);
      const idleRss = rssMb(pid);
      await callJson('POST', `${receiverUrl}/reset`, { timeoutMs: 30_000 });

      const callbacks = concurrency * ROUNDS;
      await ingestBatches({
        apiUrl,
        token: INGEST_TOKEN,
        count: callbacks,
        batchSize: 500,
        inFlight: 2,
        programId: 'bench-c',
        objectType: 'subscription',
        idPrefix: `c${concurrency}-`,
      });
      sent += callbacks;
      const rssSamples: number[] = [];
      let maxDb = 0;
      let maxInFlight = 0;
      let first: { at: number; cpu: number } | undefined;
      // Each read also samples the worker's memory and database connections (every 100 ms).
      const answered = async (): Promise<number> => {
        if (worker.child.exitCode !== null) throw new Error(`the worker exited:\n${worker.output().slice(-2_000)}`);
        const { slow } = (await callJson('GET', `${receiverUrl}/stats`, { timeoutMs: 30_000 })) as { slow: { received: number; answered: number } };
        maxInFlight = Math.max(maxInFlight, slow.received - slow.answered);
        if (!first && slow.received > 0) first = { at: performance.now(), cpu: cpuMs(pid) };
        // Memory while (nearly) every slot holds a callback.
        if (slow.received - slow.answered >= 0.9 * concurrency) rssSamples.push(rssMb(pid));
        const { rows } = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [APPLICATION_NAME]);
        maxDb = Math.max(maxDb, rows[0]!.n);
        return slow.answered;
      };
      await waitFor(answered, (n) => n >= callbacks, LEVEL_TIMEOUT_MS, `concurrency ${concurrency}: ${callbacks} callbacks answered`, 100);
      const seconds = (performance.now() - first!.at) / 1000;
      const cpu = cpuMs(pid) - first!.cpu;
      const peak = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
      const busyRss = median(rssSamples);
      await worker.stop('SIGTERM', 15_000);
      const level: Level = {
        concurrency,
        callbacks,
        idleRssMb: round(idleRss),
        busyRssMb: round(busyRss),
        peakRssMb: round(peak),
        rssPerInFlightKb: round(((busyRss - idleRss) * 1024) / concurrency),
        cpuPerCallbackUs: Math.round((cpu * 1000) / callbacks),
        callbacksPerSecond: round(callbacks / seconds),
        idealPerSecond: round(concurrency / (HOLD_MS / 1000)),
        maxInFlight,
        maxDbConnections: maxDb,
        errorLogLines: worker
          .output()
          .split('\n')
          .filter((line) => /"level":"(error|warn)"/.test(line)).length,
      };
      levels.push(level);
      log(JSON.stringify(level));
    }

    const statuses = await admin.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM deliveries GROUP BY status');
    const succeeded = statuses.rows.find((row) => row.status === 'succeeded')?.n ?? 0;
    if (succeeded !== sent) throw new Error(`expected ${sent} delivered, found ${JSON.stringify(statuses.rows)}`);

    const head = [
      'concurrency',
      'idle RSS MB',
      'busy RSS MB',
      'peak RSS MB',
      'KB per in-flight',
      'CPU µs/callback',
      'callbacks/s',
      'ideal/s',
      'max in flight',
      'max DB conns',
      'warn/error lines',
    ];
    const lines = levels.map((l) =>
      [
        l.concurrency,
        l.idleRssMb,
        l.busyRssMb,
        l.peakRssMb,
        l.rssPerInFlightKb,
        l.cpuPerCallbackUs,
        l.callbacksPerSecond,
        l.idealPerSecond,
        l.maxInFlight,
        l.maxDbConnections,
        l.errorLogLines,
      ].map(String),
    );
    const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
    const fmt = (cells: string[]): string => `| ${cells.map((c, i) => c.padStart(widths[i]!)).join(' | ')} |`;
    console.log(`delivery-worker cost per in-flight callback (receiver holds each ${HOLD_MS} ms, ${ROUNDS} rounds per level)`);
    console.log(fmt(head));
    for (const l of lines) console.log(fmt(l));
    writeFileSync(
      path.join(ROOT, 'bench/results/concurrency.json'),
      `${JSON.stringify({ date: new Date().toISOString(), holdMs: HOLD_MS, rounds: ROUNDS, levels }, null, 2)}\n`,
    );
  } finally {
    await cleanup();
  }
}

// The whole run is bounded: a hang past this fails it, after cleaning up.
const watchdog = setTimeout(() => {
  log('run exceeded its time limit');
  void cleanup().finally(() => process.exit(1));
}, 6 * 60_000);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void cleanup().finally(() => process.exit(130)));

main().then(
  () => {
    clearTimeout(watchdog);
    process.exit(0);
  },
  (error: unknown) => {
    log(`FAILED: ${(error as Error).stack ?? String(error)}`);
    clearTimeout(watchdog);
    process.exit(1);
  },
);
