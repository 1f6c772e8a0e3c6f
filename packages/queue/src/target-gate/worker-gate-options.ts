import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { TargetGateSettings } from './target-gate';

/** Where the worker's gate reports what it saw: breakers opening and closing, Redis errors it rode out. */
export interface WorkerGateLogger {
  info(message: string, fields: Record<string, unknown>): void;
  warn(message: string, fields: Record<string, unknown>): void;
}

/** Options of a worker's gate (createWorkerGate): the gate's own, not the worker's whole config. */
export interface WorkerGateOptions {
  /** The QUEUE_PREFIX: the gate's keys live under `<queuePrefix>:gate:` (target-gate.ts). Required. */
  queuePrefix: string;
  /**
   * The limit, the breaker's rules and how long a job let in one by one holds its slot at most
   * (leaseMs: longer than any attempt can take). Required: @herald/config reads and defaults the
   * limit and the breaker (TARGET_MAX_IN_FLIGHT, TARGET_BREAKER_*), and the caller knows how long
   * its attempts take.
   */
  settings: TargetGateSettings;
  /** Required. */
  logger: WorkerGateLogger;
  /**
   * How long the worker lets its jobs into a target's leased slots before it asks the gate again:
   * how late at most it notices a breaker that another worker's failures opened. A lease in use is
   * renewed in the background once three quarters of this have passed, so that a busy healthy
   * target's jobs never wait for Redis; after it runs out, the lease shrinks to the slots in use.
   * @default 200
   */
  leaseRenewMs?: number;
  /**
   * How long a job may wait in the worker for a slot of its target's lease when every leased slot
   * is taken, before it asks the gate by itself (and, the target being at its limit, is deferred).
   * A healthy target frees one of a worker's slots every few ms: a wait that short costs less than
   * a trip through the delayed set. Only as many jobs wait as the lease's slots should free
   * meanwhile (at the lease's average slot time), so a slow target's jobs do not wait at all.
   * @default 20
   */
  leaseWaitMs?: number;
  /**
   * How long a verdict may wait to be sent with the next admission: a busy worker admits a job
   * every millisecond or so, and the job that ended still records its attempt meanwhile, so a
   * release rides on an admission's script run instead of costing one of its own (about half the
   * gate's Redis and worker CPU per callback). The slot is held that much longer at most.
   * @default 5
   */
  releaseLingerMs?: number;
  /**
   * Most calls (releases, lease requests, admissions) one script run carries. A worker passes
   * twice its concurrency: a release and an admission for each of its jobs.
   * @default 256 (twice WORKER_CONCURRENCY's default)
   */
  maxBatch?: number;
  /** Script runs in flight at once; calls made meanwhile wait and go together in the next. @default 2 */
  maxRunsInFlight?: number;
  /**
   * Names this worker's leased slots in Redis: unique among every worker sharing the queue.
   * @default `<hostname>:<pid>:<8 random hex digits>`
   */
  holder?: string;
}

/** The options with every default applied. */
export type ResolvedWorkerGateOptions = Required<WorkerGateOptions>;

/** Applies the defaults and rejects a bad value at once, naming the option. */
export function resolveWorkerGateOptions(options: WorkerGateOptions): ResolvedWorkerGateOptions {
  const resolved: ResolvedWorkerGateOptions = {
    ...options,
    leaseRenewMs: options.leaseRenewMs ?? 200,
    leaseWaitMs: options.leaseWaitMs ?? 20,
    releaseLingerMs: options.releaseLingerMs ?? 5,
    maxBatch: options.maxBatch ?? 256,
    maxRunsInFlight: options.maxRunsInFlight ?? 2,
    holder: options.holder ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`,
  };
  const positive = ['leaseRenewMs', 'maxBatch', 'maxRunsInFlight'] as const;
  for (const name of positive) if (!(resolved[name] > 0)) throw new RangeError(`worker gate: ${name} must be above 0, got ${resolved[name]}`);
  for (const name of ['leaseWaitMs', 'releaseLingerMs'] as const) {
    if (!(resolved[name] >= 0)) throw new RangeError(`worker gate: ${name} must be 0 or more, got ${resolved[name]}`);
  }
  if (resolved.holder === '') throw new RangeError('worker gate: holder must not be empty');
  return resolved;
}
