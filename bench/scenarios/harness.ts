/**
 * What every scenario of `pnpm bench` shares: the run's processes (stopped by its cleanup), its
 * log, the row type of its table, and the small measuring helpers. The scenarios are in this
 * folder, one module each; bench/run.ts runs them in order.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import type { PrismaClient } from '@herald/db/prisma';
import { callJson, waitFor, type ServiceProcess } from '@herald/testing';
import { cpuByRole, formatCpu, machineBusy, type CpuAccounts, type CpuSnapshot } from '../cpu';
import type { Drain, DrainResult } from '../ceilings';
import { postJson } from '../post-json';
import { startService } from '../setup';
import { DRAIN_TIMEOUT_MS, INGEST_TOKEN, REDIS_URL } from '../settings';

/** A row of the bench's table and results file. */
export interface Row {
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

/** Processes whose error log lines are printed when the run fails. */
export const serviceLogs: Array<[string, ServiceProcess]> = [];
/** What the run's cleanup does, in reverse order: processes first, then the keys and the database they used. */
export const cleanups: Array<() => Promise<void>> = [];
export const log = (message: string): void => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);
export const round = (n: number, digits = 2): number => Number(n.toFixed(digits));

/** Starts a process that logs its port when it listens; the run's cleanup stops it. */
export async function startListening(script: string, env: Record<string, string>): Promise<{ proc: ServiceProcess; port: number }> {
  const proc = startService(script, env);
  cleanups.push(async () => void (await proc.stop('SIGTERM', 15_000)));
  const entry = await proc.waitForLog(/listening/, 30_000);
  return { proc, port: Number(entry.port) };
}

/** Starts a process that the run's cleanup stops too. */
export function startProcess(script: string, env: Record<string, string>): ServiceProcess {
  const proc = startService(script, env);
  cleanups.push(async () => void (await proc.stop('SIGTERM', 15_000)));
  return proc;
}

/** Peak resident set size (VmHWM) of a process, in MB. */
export function peakRssMb(pid: number | undefined): number {
  if (!pid) return NaN;
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? round(Number(match[1]) / 1024, 1) : NaN;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** How busy the machine's cores were during a drain, for a row's note. */
export function busyNote(result: DrainResult): string {
  return `machine ${Math.round(result.busy * 100)} % busy`;
}

/** What bench/receiver.ts counted since its last reset. */
export interface ReceiverStats {
  callbacks: number;
  tokens: number;
  /** When each token request arrived (ms since the epoch), in order. */
  tokenTimes: number[];
  /** When the last callback arrived (ms since the epoch). */
  lastCallbackAt: number;
  /** The /stuck endpoint's callbacks: refused (an object stuck) and delivered. */
  stuck?: { refused: number; delivered: number };
  /** The /limited endpoint's callbacks: delivered (with the first and last one's time, ms) and refused with 429. */
  limited?: { delivered: number; refused: number; firstAt: number; lastAt: number };
}

/** The run's database, queues and Redis prefixes: what every scenario, even the first, has. */
export interface BenchBase {
  id: string;
  databaseUrl: string;
  queuePrefix: string;
  /** Queue prefix of the bare ceilings' queues. */
  barePrefix: string;
  prisma: PrismaClient;
}

/** The base, plus the receiver, the events-api and the tenants the delivery scenarios share. */
export interface Bench extends BenchBase {
  apiUrl: string;
  receiverUrl: string;
  /** The environment of the bench's delivery-workers (WORKER_CONCURRENCY set). */
  env: Record<string, string>;
  cpu: CpuAccounts;
  stats(): Promise<ReceiverStats>;
  reset(): Promise<void>;
  drain: Drain;
}

/**
 * Times the receiver from the first callback to the `expected`-th, with the CPU that each process
 * and the whole machine spent meanwhile; `workers` (started, maybe not ready yet) are counted as `role`.
 */
export function receiverDrain(cpu: CpuAccounts, stats: () => Promise<ReceiverStats>): Drain {
  return async (expected, workers, role) => {
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
}

/** The receiver's counters, and their reset. */
export function receiverClient(receiverUrl: string): { stats(): Promise<ReceiverStats>; reset(): Promise<void> } {
  return {
    stats: () => callJson<ReceiverStats>('GET', `${receiverUrl}/stats`),
    reset: async () => {
      await callJson('POST', `${receiverUrl}/reset`);
    },
  };
}

/**
 * Ingests `count` single events at `rate` per second (fields from `fields(i)`), each checked for a
 * 201; returns when each was sent, by event id (and fills `answeredAt`, when given, with when each
 * was answered).
 */
export async function postEventsAtRate(
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
    // Not a wait for an event: the load generator's pace, `rate` requests per second (open loop).
    const wait = started + (i * 1000) / rate - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
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

export async function deleteRedisKeys(prefix: string): Promise<void> {
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
