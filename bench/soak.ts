/**
 * The soak: steady delivery at a moderate rate for many minutes, with retries in the
 * mix, watching what a short run cannot show: whether a delivery-worker's memory grows, whether
 * latency drifts, and how much Redis memory each job held costs.
 *
 * One delivery-worker with the default settings; program `bench-s` with one target at the
 * receiver's flaky endpoint (bench/receiver.ts), which answers 500 to the first try of every
 * `failEvery`-th callback and 200 to its retry (Herald's default backoff brings it back after
 * 15-30 s). Events are ingested every 100 ms in small batches, `rate` per second in all. Every
 * interval it samples the worker's RSS (VmRSS), the end-to-end latency (ingest request sent to
 * the receiver's 200) of the callbacks delivered in the interval, first tries and retries apart,
 * and Redis: used_memory (INFO memory) over the jobs Redis holds for the queue (delivered jobs
 * stay JOBS_KEEP_COMPLETED_SECONDS, a day by default, so this is what a day's retention costs per
 * callback). At the end it waits for every callback, retries included, and fails on a missing
 * one or a failed ingest request, never on a figure.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { callJson, requestJson, waitFor, type ServiceProcess } from '@herald/testing';
import { DELIVERIES_QUEUE } from '@herald/queue';
import type { CeilingRow } from './ceilings';

export interface SoakOptions {
  apiUrl: string;
  receiverUrl: string;
  adminToken: string;
  ingestToken: string;
  redisUrl: string;
  queuePrefix: string;
  /** The bench database, where the soak reads its deliveries' deferrals. */
  databaseUrl: string;
  /** How long events are ingested. */
  seconds: number;
  /** Events per second (one callback each). */
  rate: number;
  /** One callback in this many first fails with a 500, then succeeds on its retry. */
  failEvery: number;
  /** A delivery-worker with the default settings. */
  startWorker: () => ServiceProcess;
  addRow: (row: CeilingRow) => void;
  log: (message: string) => void;
}

/** One sample of the soak. */
interface SoakSample {
  /** Seconds since the soak started. */
  at: number;
  rssMb: number;
  firstTries: number[];
  retries: number[];
  redisBytes: number;
  jobsHeld: number;
}

/** The soak's sampling interval: about 12 samples over a short soak, at most one every 30 s. */
function soakIntervalSeconds(seconds: number): number {
  return Math.min(30, Math.max(5, Math.round(seconds / 12)));
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const round = (n: number, digits = 1): number => Number(n.toFixed(digits));

function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function rssMb(pid: number | undefined): number {
  const match = pid ? /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8')) : null;
  return match ? round(Number(match[1]) / 1024) : NaN;
}

interface FlakyTake {
  delivered: number;
  failed: number;
  retried: number;
  waitingRetry: number;
  arrivals: Array<[string, number, boolean]>;
}

export async function runSoak(options: SoakOptions): Promise<void> {
  const { log } = options;
  const admin = async (method: string, route: string, body: unknown): Promise<void> => {
    await callJson(method, `${options.apiUrl}${route}`, { token: options.adminToken, body, timeoutMs: 30_000 });
  };
  const take = (): Promise<FlakyTake> => callJson<FlakyTake>('POST', `${options.receiverUrl}/flaky-take`, { timeoutMs: 30_000 });
  await admin('POST', '/admin/programs', { id: 'bench-s', name: 'soak' });
  // ?verify=false: the soak counts the callbacks of its events only.
  await admin('PUT', '/admin/programs/bench-s/notification-target?verify=false', {
    url: `${options.receiverUrl}/flaky/${options.failEvery}/soak`,
    auth: { mode: 'none' },
  });
  await take();

  const redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 2 });
  const queue = new Queue(DELIVERIES_QUEUE, { connection: redis, prefix: options.queuePrefix });
  const redisMemory = async (): Promise<{ bytes: number; jobs: number }> => {
    const info = await redis.info('memory');
    const counts = await queue.getJobCounts();
    return { bytes: Number(/used_memory:(\d+)/.exec(info)?.[1] ?? NaN), jobs: Object.values(counts).reduce((a, b) => a + b, 0) };
  };
  // The jobs earlier sections left (delivered or failed, kept up to JOBS_KEEP_*_MAX) go first: held
  // at that cap, the queue would replace one old job per new one, and Redis memory per job held
  // could not be told from the soak's own.
  for (const state of ['completed', 'failed'] as const) await queue.clean(0, Number.MAX_SAFE_INTEGER, state);
  const worker = options.startWorker();
  try {
    await worker.waitForLog('delivery-worker ready', 60_000);
    const baseline = await redisMemory();
    const interval = soakIntervalSeconds(options.seconds);
    log(`soak: ${options.seconds} s at ${options.rate} events/s, 1 in ${options.failEvery} callbacks answered 500 once, a sample every ${interval} s`);

    // The load: every 100 ms, one batch of the events due by then; requests are not awaited in
    // turn, so a slow answer never slows the rate (their failures are counted and fail the run).
    const sentAt = new Map<string, number>();
    const failures: string[] = [];
    const inFlight = new Set<Promise<void>>();
    const started = Date.now();
    let sent = 0;
    let sending = true;
    const sender = (async () => {
      while (sending && Date.now() - started < options.seconds * 1000) {
        const due = Math.floor(((Date.now() - started) * options.rate) / 1000) - sent;
        if (due > 0) {
          const events = Array.from({ length: due }, (_, i) => ({
            id: `Event-${randomUUID()}`,
            programId: 'bench-s',
            origin: 'api',
            eventType: 'created',
            objectId: `soak-${sent + i}`,
            objectType: 'payment',
          }));
          sent += due;
          const now = Date.now();
          for (const e of events) sentAt.set(e.id, now);
          const request = requestJson('POST', `${options.apiUrl}/internal/events`, { token: options.ingestToken, body: { events }, timeoutMs: 30_000 })
            .then(({ status, body }) => void (status !== 201 && failures.push(`${status}: ${body.slice(0, 200)}`)))
            .catch((error: unknown) => void failures.push((error as Error).message))
            .finally(() => inFlight.delete(request));
          inFlight.add(request);
        }
        await sleep(100);
      }
    })();

    const samples: SoakSample[] = [];
    const delivered = new Set<string>();
    const collect = async (sample: Omit<SoakSample, 'firstTries' | 'retries'>): Promise<SoakSample> => {
      const taken = await take();
      const firstTries: number[] = [];
      const retries: number[] = [];
      for (const [id, at, retried] of taken.arrivals) {
        const sentTime = sentAt.get(id);
        if (sentTime === undefined || delivered.has(id)) continue;
        delivered.add(id);
        (retried ? retries : firstTries).push(at - sentTime);
      }
      return { ...sample, firstTries, retries };
    };
    const describe = (s: SoakSample): string =>
      `first tries p50 ${percentile(s.firstTries, 50)} ms, p99 ${percentile(s.firstTries, 99)} ms (${s.firstTries.length}); ` +
      `retries ${s.retries.length}${s.retries.length ? `, p99 ${round(percentile(s.retries, 99) / 1000)} s` : ''}; ` +
      `Redis ${s.jobsHeld > baseline.jobs ? Math.round((s.redisBytes - baseline.bytes) / (s.jobsHeld - baseline.jobs)) : NaN} B per job held (${s.jobsHeld} jobs)`;

    for (let next = interval; next <= options.seconds; next += interval) {
      await sleep(started + next * 1000 - Date.now());
      if (worker.child.exitCode !== null || worker.child.signalCode !== null)
        throw new Error(`the soak's delivery-worker exited: ${worker.output().slice(-2_000)}`);
      const memory = await redisMemory();
      const sample = await collect({ at: next, rssMb: rssMb(worker.child.pid), redisBytes: memory.bytes, jobsHeld: memory.jobs });
      samples.push(sample);
      log(`soak ${next} s: worker RSS ${sample.rssMb} MB; ${describe(sample)}`);
    }
    sending = false;
    await sender;
    await Promise.all(inFlight);
    if (failures.length > 0) throw new Error(`soak: ${failures.length} ingest requests failed, the first: ${failures[0]}`);

    // Every callback, retries included (the last retries come back up to 30 s after the load ends).
    // A worker that fell behind drains its backlog: that is a figure (the drain time), not an error,
    // so the wait goes on while callbacks keep arriving, and fails after 120 s without one, or after
    // as long again as the soak itself.
    const loadEnded = Date.now();
    const giveUpAt = loadEnded + Math.max(120_000, options.seconds * 1000);
    let progressAt = loadEnded;
    let seen = delivered.size;
    const tail: number[] = [];
    const tailRetries: number[] = [];
    // Each read also collects the latencies of the callbacks that arrived since the last (every second).
    const deliveredSoFar = async (): Promise<number> => {
      if (delivered.size > seen) [seen, progressAt] = [delivered.size, Date.now()];
      if (Date.now() - progressAt > 120_000) {
        throw new Error(`soak: ${delivered.size} of ${sent} callbacks delivered ${Math.round((Date.now() - loadEnded) / 1000)} s after the load ended`);
      }
      const s = await collect({ at: 0, rssMb: 0, redisBytes: 0, jobsHeld: 0 });
      tail.push(...s.firstTries);
      tailRetries.push(...s.retries);
      return delivered.size;
    };
    await waitFor(deliveredSoFar, (n) => n >= sent, giveUpAt - Date.now(), `soak: ${sent} callbacks delivered`, 1000);
    const drainSeconds = (Date.now() - loadEnded) / 1000;
    const end = await redisMemory();
    const counts = await take();
    // Jobs the target gate sent back to wait (its in-flight limit): what stretches a first try's latency.
    const database = new pg.Client({ connectionString: options.databaseUrl });
    await database.connect();
    const deferred = (
      await database
        .query<{ jobs: string; deferrals: string }>(
          `SELECT count(*) FILTER (WHERE d.deferrals > 0) AS jobs, coalesce(sum(d.deferrals), 0) AS deferrals
           FROM deliveries d JOIN events e ON e.id = d.event_id WHERE e.program_id = 'bench-s'`,
        )
        .finally(() => database.end())
    ).rows[0]!;
    // A cross-check that other users of the Redis instance cannot disturb: the size of the hashes of
    // the last delivered jobs (without their entry in the completed set and the events stream).
    const recent = await redis.zrevrange(`${options.queuePrefix}:${DELIVERIES_QUEUE}:completed`, 0, 49);
    const sizes = await Promise.all(
      recent.map(async (id) => Number((await redis.call('MEMORY', 'USAGE', `${options.queuePrefix}:${DELIVERIES_QUEUE}:${id}`)) ?? 0)),
    );
    const jobHash = sizes.length > 0 ? Math.round(sizes.reduce((a, b) => a + b, 0) / sizes.length) : NaN;

    for (const s of samples) {
      options.addRow({ scenario: `soak ${s.at} s: delivery-worker RSS`, figure: s.rssMb, unit: 'MB', note: describe(s) });
    }
    const third = Math.max(1, Math.floor(samples.length / 3));
    const mean = (xs: SoakSample[]): number => xs.reduce((a, s) => a + s.rssMb, 0) / xs.length;
    const first = mean(samples.slice(0, third));
    const last = mean(samples.slice(-third));
    const growth = (last - first) / first;
    const all = samples.flatMap((s) => s.firstTries).concat(tail);
    const allRetries = samples.flatMap((s) => s.retries).concat(tailRetries);
    options.addRow({
      scenario: `soak verdict: delivery-worker RSS, mean of the last third vs the first (${third} samples each)`,
      figure: round(last),
      unit: 'MB',
      ceiling: first,
      ceilingName: 'first third',
      target: '<= 1.1 (no growth)',
      note: `${growth <= 0.1 ? 'no growth' : 'GROWS'}: ${round(first)} -> ${round(last)} MB (${growth >= 0 ? '+' : ''}${round(growth * 100)} %), peak ${round(Math.max(...samples.map((s) => s.rssMb)))} MB`,
    });
    options.addRow({
      scenario: `soak: end-to-end p99 of first tries over ${options.seconds} s at ${options.rate} events/s`,
      figure: percentile(all, 99),
      unit: 'ms',
      note: `the last callback ${round(drainSeconds, 1)} s after the load ended; p50 ${percentile(all, 50)} ms, worst interval p99 ${Math.max(...samples.map((s) => percentile(s.firstTries, 99)).filter(Number.isFinite))} ms; ${sent} callbacks, ${counts.failed} answered 500 once, retried after p50 ${round(percentile(allRetries, 50) / 1000)} s; ${deferred.jobs} deferred by the target gate (${deferred.deferrals} deferrals)`,
    });
    // From the first sample on: the fixed start-up costs (the queue's event stream filling up to its
    // cap, the target's gate keys) are in the baseline's delta, not in a job's share.
    const from = samples[0] ?? { redisBytes: baseline.bytes, jobsHeld: baseline.jobs };
    options.addRow({
      scenario: 'soak: Redis used_memory per job held (INFO memory delta / jobs of the queue, from the first sample)',
      figure: end.jobs > from.jobsHeld ? Math.round((end.bytes - from.redisBytes) / (end.jobs - from.jobsHeld)) : NaN,
      unit: 'B/job',
      note: `+${round((end.bytes - baseline.bytes) / 2 ** 20)} MB for +${end.jobs - baseline.jobs} jobs over the whole soak (delivered jobs stay JOBS_KEEP_COMPLETED_SECONDS); INFO is the whole instance's, other users of it count too; MEMORY USAGE of a delivered job's hash ${jobHash} B (mean of ${sizes.length})`,
    });
  } finally {
    await worker.stop('SIGTERM', 15_000);
    await queue.close();
    redis.disconnect();
  }
}
