import type { TargetGateConfig } from '@herald/config';
import type { DeferralReason } from '@herald/domain';
import type { RedisConnection } from '../redis';
import { GATE_SCRIPT } from './gate-script';

/**
 * The gate's settings: the limit and the breaker's rules as @herald/config reads them
 * (TARGET_MAX_IN_FLIGHT, TARGET_BREAKER_*), and how long a job's slot is held at most. The limit
 * is each target's unless the call names the target's own (its delivery policy's maxInFlight).
 */
export interface TargetGateSettings extends TargetGateConfig {
  /**
   * How long a slot (or the probe's turn) is held at most: longer than any attempt can take, so
   * that only a job whose worker died (and never released) keeps its slot this long.
   */
  readonly leaseMs: number;
}

/** The gate's answer for a job: let in (as the half-open breaker's probe, maybe), or come back later. */
export type Admission = { admitted: true; probe: boolean } | { admitted: false; reason: DeferralReason; delayMs: number };

/**
 * How a job that was let in ended, as the breaker and flow control see it: `success` (HTTP 200),
 * `failure` (no answer: timeout, refused or reset connection, TLS; the failures that hold worker
 * slots), `throttled` (429 or 503: the receiver pushes back), `answer` (any other HTTP answer),
 * `neutral` (no POST made, or Herald itself failed). `throttled` halves the target's in-flight
 * window, successes grow it back (gate.lua's flow control).
 */
export type GateVerdict = 'success' | 'failure' | 'throttled' | 'answer' | 'neutral';

/** What a release did to the target's breaker. */
export type BreakerChange = 'opened' | 'closed' | 'reopened' | undefined;

/**
 * A target's own limits (its delivery policy), when the caller knows them: the in-flight limit
 * (otherwise TARGET_MAX_IN_FLIGHT) and the most callbacks per second (otherwise none). The last
 * ones a batch gives for a target hold for the whole batch.
 */
export interface TargetLimits {
  maxInFlight?: number;
  /** 0 or absent: no rate limit. */
  maxRatePerSecond?: number;
}

export interface GateEntry extends TargetLimits {
  targetId: string;
  jobId: string;
}

export interface GateRelease {
  targetId: string;
  jobId: string;
  verdict: GateVerdict;
  /** How long the job held its slot, in ms (feeds the average that spaces a busy target's deferrals). */
  durationMs: number;
  /**
   * How many jobs in a row ended so, with `durationMs` their average (default 1): the successes of
   * jobs that ran in leased slots, sent together.
   */
  times?: number;
  /**
   * The receiver asked for a pause (a 429 or 503 with Retry-After), in ms: the target's breaker
   * opens for that long, so that none of its jobs is sent (nor spends an attempt) until then.
   */
  pauseMs?: number;
}

/**
 * A worker's request for its share of a target's slots (see GATE_SCRIPT): it must keep `keep`
 * (its jobs run in them) and would like `want`. `holder` names the worker, unique among every
 * worker process sharing the queue.
 */
export interface LeaseRequest extends TargetLimits {
  targetId: string;
  holder: string;
  keep: number;
  want: number;
  /** When the holder's oldest job in a leased slot started (ms), or 0 when none runs. */
  since: number;
  /** Jobs the gate had deferred that went into the holder's slots since its last renewal: no longer deferred. */
  returned?: readonly string[];
}

/**
 * What a lease request got: the slots its holder now holds (up to what it wanted, as far as the
 * limit leaves room and within its share), and whether the target is free for leases (its breaker
 * closed). When it is not, the holder's jobs are to be let in one by one. `contended`: the workers
 * want more slots than the limit, so each should keep no more than its jobs use.
 */
export interface LeaseGrant {
  held: number;
  free: boolean;
  contended: boolean;
}

/** Shortest and longest nominal wait of a job deferred because its target is busy. */
const BUSY_DELAY_MIN_MS = 100;
const BUSY_DELAY_MAX_MS = 30_000;

/**
 * How long a lease's slots stay taken unless renewed: far beyond a renewal period (a pause of the
 * worker or of Redis must not free slots its jobs run in), and short so that the slots of a worker
 * that died free soon, where a job's own slot waits for its longest attempt.
 */
const LEASE_TTL_MS = 10_000;
/**
 * A lease not renewed for this long is silent: its worker died, lost Redis or is stalled, where a
 * worker renews a lease in use every few hundred ms. Its slots stay taken until its ttl passes,
 * but it takes no part in the shares, and a busy target's deferrals come back when they free
 * instead of being spaced by its oldest job (which may have ended long ago).
 */
const SILENT_LEASE_MS = 2_000;

/**
 * The target gate: a per-target limit on jobs in flight and a per-target circuit breaker, both in
 * Redis (the keys below) and shared by every worker process. Each call takes a batch and costs one round
 * trip. Deferral delays carry jitter so that jobs sent away together do not all come back together:
 * a busy target's jobs come back after 0.5 to 1.5 times the nominal delay (see GATE_SCRIPT), an
 * open breaker's jobs spread over the open period that follows its half-open time, jobs arriving
 * while a probe runs after 0 to 2 times the average slot time (at most BUSY_DELAY_MAX_MS).
 */
export interface TargetGate {
  /**
   * Releases the jobs that ended, renews (or grants, or shrinks) the leases, then admits (or
   * defers) the jobs about to start: one round trip.
   */
  settle(
    releases: readonly GateRelease[],
    entries: readonly GateEntry[],
    leases?: readonly LeaseRequest[],
  ): Promise<{ changes: BreakerChange[]; grants: LeaseGrant[]; admissions: Admission[] }>;
  admit(entries: readonly GateEntry[]): Promise<Admission[]>;
  /** Gives jobs' slots back with their verdicts (for the breaker): the jobs ended. */
  release(releases: readonly GateRelease[]): Promise<BreakerChange[]>;
  /**
   * Gives a holder's leases of these targets back whole (a lease request that keeps and wants
   * nothing), naming the jobs the gate had deferred that went into their slots since the last
   * renewal: the holder stops.
   */
  giveBackLeases(holder: string, leases: ReadonlyArray<{ targetId: string; returned?: readonly string[] }>): Promise<void>;
}

const GATE_COMMAND = 'heraldGate';
const CHANGES: BreakerChange[] = [undefined, 'opened', 'closed', 'reopened'];

type GateCommands = Record<typeof GATE_COMMAND, (...args: Array<string | number>) => Promise<number[]>>;

export function createTargetGate(
  redis: RedisConnection,
  options: { queuePrefix: string; settings: TargetGateSettings; random?: () => number; now?: () => number },
): TargetGate {
  const { settings } = options;
  const random = options.random ?? Math.random;
  const now = options.now ?? Date.now;
  const keysOf = (targetId: string) => targetKeys(options.queuePrefix, targetId);
  // ioredis runs it with EVALSHA, loading the script once per connection. The number of keys
  // varies with the batch, so each call passes it first.
  if (!(GATE_COMMAND in redis)) redis.defineCommand(GATE_COMMAND, { lua: GATE_SCRIPT });
  const commands = redis as unknown as GateCommands;
  const { breaker } = settings;

  const settle: TargetGate['settle'] = async (releases, entries, leases = []) => {
    if (releases.length === 0 && entries.length === 0 && leases.length === 0) return { changes: [], grants: [], admissions: [] };
    // Each target's keys once, however many of the batch's jobs go to it (a busy worker's batch
    // is mostly a few targets): the script finds them by the target's position.
    const keys = [breakersKey(options.queuePrefix)];
    const positions = new Map<string, number>();
    // Each target's in-flight limit and rate, two per position: its own when a call of the batch
    // names them, else TARGET_MAX_IN_FLIGHT and no rate limit.
    const limits: number[] = [];
    const positionOf = (targetId: string, own: TargetLimits = {}): number => {
      let position = positions.get(targetId);
      if (position === undefined) {
        const target = keysOf(targetId);
        keys.push(target.inflight, target.deferred, target.breaker, target.window, target.leased, target.wanted);
        position = positions.size + 1;
        positions.set(targetId, position);
        limits.push(settings.maxInFlight, 0);
      }
      if (own.maxInFlight !== undefined) limits[2 * position - 2] = own.maxInFlight;
      if (own.maxRatePerSecond !== undefined) limits[2 * position - 1] = own.maxRatePerSecond;
      return position;
    };
    const releaseArgs = releases.flatMap((r) => [
      positionOf(r.targetId),
      r.targetId,
      r.jobId,
      r.verdict,
      Math.max(0, Math.round(r.durationMs)),
      r.times ?? 1,
      Math.max(0, Math.round(r.pauseMs ?? 0)),
    ]);
    const leaseArgs = leases.flatMap((l) => [
      positionOf(l.targetId, l),
      l.holder,
      l.keep,
      l.want,
      Math.round(l.since),
      l.returned?.length ?? 0,
      ...(l.returned ?? []),
    ]);
    const entryArgs = entries.flatMap((entry) => [positionOf(entry.targetId, entry), entry.jobId]);
    const answer = await commands[GATE_COMMAND](
      keys.length,
      ...keys,
      now(),
      releases.length,
      settings.leaseMs,
      // Unused: each target's limit follows the fixed arguments (`limits`).
      0,
      BUSY_DELAY_MIN_MS,
      BUSY_DELAY_MAX_MS,
      DEFERRED_GRACE_MS,
      breaker.failures,
      Math.round(breaker.ratio * 1000),
      breaker.windowMs,
      breaker.minRequests,
      breaker.openMs,
      breaker.openMaxMs,
      STALE_BREAKER_MS,
      leases.length,
      LEASE_TTL_MS,
      SILENT_LEASE_MS,
      ...limits,
      ...releaseArgs,
      ...leaseArgs,
      ...entryArgs,
    );
    const changes = answer.slice(0, releases.length).map((code) => CHANGES[code]);
    const grants = leases.map((_, i): LeaseGrant => {
      const state = answer[releases.length + 2 * i + 1]!;
      return { held: answer[releases.length + 2 * i]!, free: state > 0, contended: state === 2 };
    });
    const admissions = entries.map((_, i): Admission => {
      const at = releases.length + 2 * leases.length + 3 * i;
      const [code, x, y] = [answer[at], answer[at + 1], answer[at + 2]] as [number, number, number];
      if (code === 1) return { admitted: true, probe: x === 1 };
      if (code === 2) return { admitted: false, reason: 'target_busy', delayMs: Math.round(x * (0.5 + random())) };
      if (code === 4) return { admitted: false, reason: 'rate_limited', delayMs: Math.round(x * (0.5 + random())) };
      return { admitted: false, reason: 'breaker_open', delayMs: Math.round(x + y * random()) };
    });
    return { changes, grants, admissions };
  };

  return {
    settle,
    admit: async (entries) => (await settle([], entries)).admissions,
    release: async (releases) => (await settle(releases, [])).changes,
    async giveBackLeases(holder, leases) {
      await settle(
        [],
        [],
        leases.map(({ targetId, returned }) => ({ targetId, holder, keep: 0, want: 0, since: 0, returned })),
      );
    },
  };
}

/**
 * Where the target gate keeps its state in Redis, under the QUEUE_PREFIX, so that every worker
 * process and the events-api (which reads health) agree. Per target (`<prefix>:gate:<targetId>:…`):
 * - `inflight`: ZSET job id -> lease deadline (ms), of the jobs let in one by one. A job holds a slot
 *   until it releases it or its lease runs out, so a killed worker cannot keep a slot for ever.
 * - `leased`: HASH worker -> `slots:deadline:since`, the slots each worker's lease holds, until
 *   the lease gives them back or its deadline (a ttl of seconds, moved on by each renewal) passes;
 *   `since` is when its oldest job in them started (0: none runs). They count toward the limit
 *   with the in-flight set.
 * - `wanted`: HASH worker -> `slots:deadline`, the slots each worker's lease last asked for, until
 *   the same deadline: when the workers want more than the limit, each lease keeps to its share.
 * - `deferred`: ZSET job id -> the latest time the job comes back (ms): the jobs the gate has sent
 *   away and that have not been let in since. Entries that never come back (a job removed
 *   meanwhile) are dropped DEFERRED_GRACE_MS after that time.
 * - `breaker`: HASH of the circuit breaker: `consecutive` (failures in a row), and while the
 *   breaker is open or half-open `openedAt`, `reopenAt` (when it half-opens), `openMs`,
 *   `openCount`, `probe` and `probeUntil` (the one job testing the target, and its lease); `avgMs`
 *   is how long a job holds a slot on average.
 * - `window`: HASH of the failure ratio's window, counters `n:<bucket>` and `f:<bucket>` per tenth of it.
 * And `<prefix>:gate:breakers`: ZSET target id -> reopenAt of every breaker that is not closed,
 * for the breaker-state gauge (bounded: counts per state, never a per-target series).
 */
function gateKeyPrefix(queuePrefix: string): string {
  return `${queuePrefix}:gate:`;
}

export function targetKeys(queuePrefix: string, targetId: string) {
  const base = `${gateKeyPrefix(queuePrefix)}${targetId}`;
  return {
    inflight: `${base}:inflight`,
    deferred: `${base}:deferred`,
    breaker: `${base}:breaker`,
    window: `${base}:window`,
    leased: `${base}:leased`,
    wanted: `${base}:wanted`,
  };
}

export function breakersKey(queuePrefix: string): string {
  return `${gateKeyPrefix(queuePrefix)}breakers`;
}

/** A deferred job not seen again this long after its latest return time no longer counts as deferred. */
export const DEFERRED_GRACE_MS = 5 * 60_000;

/**
 * How long a job holds a slot is averaged over the jobs that answered or failed, each new one
 * weighing 1 - SLOT_TIME_DECAY: the gate's `avgMs` (its script) and each worker's lease (its own
 * jobs) move alike.
 */
export const SLOT_TIME_DECAY = 0.8;

/** The average slot time once a job held its slot `durationMs`; `previousMs` 0: none known yet. */
export function nextSlotTime(previousMs: number, durationMs: number): number {
  return previousMs > 0 ? durationMs + (previousMs - durationMs) * SLOT_TIME_DECAY : durationMs;
}

/** A breaker left half-open with no job to probe it for this long is forgotten (its target gets no callbacks). */
export const STALE_BREAKER_MS = 24 * 3_600_000;
