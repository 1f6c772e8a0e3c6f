import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { createAuthStrategy, type CallbackAuthStrategy } from '@herald/callback-auth';
import { createCallbackSender } from '@herald/callbacks';
import type { WorkerConfig } from '@herald/config';
import {
  credentialsCipherFromConfig,
  deliveryAttemptRepository,
  storedRange,
  type AttemptRecord,
  type DeferralRecord,
  type DatabasePool,
  type DeliveryTarget,
} from '@herald/db';
import { storedAtOf, type DeliveryRef } from '@herald/domain';
import type { Logger } from '@herald/logging';
import type { HeraldMetrics } from '@herald/metrics';
import { createConnectGuard, createOutboundClient, type OutboundClient } from '@herald/outbound';
import {
  createCoalescer,
  createTargetGate,
  DELIVERIES_QUEUE,
  deliveryBackoffStrategy,
  nextSlotTime,
  type Admission,
  type BreakerChange,
  type GateEntry,
  type GateRelease,
  type LeaseGrant,
  type LeaseRequest,
  type RedisConnection,
} from '@herald/queue';
import { Worker } from 'bullmq';

import { createDeliveryProcessor, type DeliveryGate, type DeliveryOutcome, type DeliveryStore } from './processor';

/**
 * How many times a job whose worker died (its lock expired) is taken up again; one stall more and
 * BullMQ fails it ("job stalled more than allowable limit"). A callback has no side effect on
 * Herald's side that a re-run would repeat (the merchant deduplicates on webhook-id), so the limit
 * is only a guard against a job that kills its worker every time. See docs/delivery.md.
 */
const MAX_STALLED_COUNT = 3;

/**
 * Statements of each kind (load, record) one worker runs at once. Jobs that need one while both
 * run wait for the next, which carries all of them: the batches grow with the load by themselves.
 */
const STATEMENTS_IN_FLIGHT = 2;

/**
 * How long a job's record waits for those of the worker's other running jobs, to share one
 * statement and one commit with them. Only while other jobs run: a lone job's record never waits.
 * The load does not wait: it stands between the job and its POST, and there a wait of 1 ms cost
 * more callbacks per second than the statements it saved (docs/benchmarks.md).
 */
const RECORD_LINGER_MS = 1;

/**
 * Margin of a gate slot's lease over the longest an attempt can take (two POSTs, after a 401, and a
 * token request): the load before and the time the worker's own event loop may lag. Only a job
 * whose worker died keeps its slot (or the breaker's probe turn) until the lease runs out.
 */
const GATE_LEASE_MARGIN_MS = 30_000;

/**
 * How long a freed gate slot may wait to be sent with the next admission: a busy worker admits a
 * job every millisecond or so, and the job that ended still records its attempt meanwhile, so a
 * release rides on an admission's script run instead of costing one of its own (about half the
 * gate's Redis and worker CPU per callback). The slot is held that much longer at most.
 */
const GATE_RELEASE_LINGER_MS = 5;

/**
 * How long after the gate turned a job of a target away the worker stops loading that target's
 * deliveries before the gate's answer (DeliveryGate.expectsAdmission): this, or the delay the gate
 * gave if that is longer. Most targets are never turned away; the others cost no load while they wait.
 */
const TURNED_AWAY_MEMORY_MS = 1_000;
/**
 * Targets turned away lately that the worker remembers before it drops the expired ones; then
 * again each time their number doubles, so that a sweep costs O(1) per target remembered.
 */
const TURNED_AWAY_SWEEP_SIZE = 1_000;

export interface DeliveryWorkerDependencies {
  config: WorkerConfig;
  /** The pool every statement of the worker runs on. Not closed here. */
  pool: DatabasePool;
  /**
   * A `worker`-role connection: commands wait for Redis to come back instead of failing. BullMQ
   * uses it (and a blocking copy it makes), and so does the OAuth token cache. Not closed here.
   */
  connection: RedisConnection;
  logger: Logger;
  /** Where attempts, deferrals, auto-disabled targets and OAuth token requests are counted. */
  metrics: Pick<HeraldMetrics, 'deliveryAttempt' | 'deliveryDeferred' | 'oauthTokenRequested' | 'targetAutoDisabled'>;
}

/**
 * The BullMQ worker of the deliveries queue, whose `close()` also gives the target gate back the
 * slots this worker leased: otherwise they would stay counted until their lease ran out.
 */
export class DeliveryWorker extends Worker<DeliveryRef, DeliveryOutcome, string> {
  #gate: WorkerGate | undefined;

  /** The gate whose leases `close()` gives back (set once, right after construction). */
  useGate(gate: WorkerGate): void {
    this.#gate = gate;
  }

  override async close(force = false): Promise<void> {
    await super.close(force);
    await this.#gate?.close();
  }
}

/**
 * The BullMQ worker of the deliveries queue: takes up to WORKER_CONCURRENCY jobs at once and runs
 * the delivery processor on each. Any number of these, in any number of processes and machines,
 * share the queue: BullMQ hands each job to one worker at a time, and the OAuth token cache lives
 * in Redis. `close()` takes no new job and waits for the jobs in flight.
 */
export function startDeliveryWorker(deps: DeliveryWorkerDependencies): DeliveryWorker {
  const { config, pool, logger } = deps;
  const guard = createConnectGuard({ allowPrivate: config.allowPrivateTargets, hostAllowlist: config.targetHostAllowlist });
  // Callbacks (the hot path) over Node's http client, token requests (a cold path) over axios.
  const outbound = createOutboundClient({ guard });
  const tokenOutbound = createOutboundClient({ guard, transport: 'axios' });
  const gate = batchedTargetGate(deps);
  // Jobs of this worker in the processor now: a job's statements wait for others' only when there are others.
  let running = 0;
  const processor = createDeliveryProcessor({
    deliveries: batchedDeliveryStore(pool, config, () => (running > 1 ? RECORD_LINGER_MS : 0)),
    authFor: (target) => authStrategyFor(target, deps, tokenOutbound),
    send: createCallbackSender({ timeoutMs: config.callback.timeoutMs, responseMaxBytes: config.callback.responseMaxBytes, outbound }),
    gate,
    logger,
    metrics: deps.metrics,
    autoDisableAfterMs: config.targetAutoDisableAfterMs,
  });
  const worker = new DeliveryWorker(
    DELIVERIES_QUEUE,
    async (job, token) => {
      running += 1;
      try {
        return await processor(job, token);
      } finally {
        running -= 1;
      }
    },
    {
      connection: deps.connection,
      prefix: config.queuePrefix,
      name: `${hostname()}:${process.pid}`,
      concurrency: config.worker.concurrency,
      lockDuration: config.worker.lockDurationMs,
      stalledInterval: config.worker.stalledIntervalMs,
      maxStalledCount: MAX_STALLED_COUNT,
      // Delivery jobs carry the custom backoff type (packages/queue deliveryJobOptions): every
      // retry's delay comes from here, exponential with jitter or a merchant's Retry-After.
      settings: { backoffStrategy: deliveryBackoffStrategy(config.retry) },
    },
  );
  worker.useGate(gate);
  worker.on('error', (error) => logger.warn('delivery worker error', { error: error.message }));
  return worker;
}

/**
 * The processor's reads and writes, gathered across the jobs this worker runs at once: one
 * statement loads the deliveries, targets and events of many jobs, one records their attempts.
 * A load joins the loads of the same tick, or of the time the statements in flight take; a record
 * also waits up to `recordLingerMs` for others to join its statement.
 */
function batchedDeliveryStore(pool: DatabasePool, config: WorkerConfig, recordLingerMs: () => number): DeliveryStore {
  const repository = deliveryAttemptRepository(pool, credentialsCipherFromConfig(config));
  const options = { maxBatch: config.worker.concurrency, maxInFlight: STATEMENTS_IN_FLIGHT };
  const load = createCoalescer(async (jobs: DeliveryRef[]) => {
    const ids = jobs.map((job) => job.deliveryId);
    const found = await repository.loadForAttempts(ids, storedRange(jobs.map(storedAtOf)));
    return ids.map((id) => found.get(id) ?? null);
  }, options);
  const record = createCoalescer((records: AttemptRecord[]) => repository.recordAttempts(records), { ...options, lingerMs: recordLingerMs });
  // One statement in flight at a time: deferrals are history, never worth a second connection.
  const recordDeferral = createCoalescer(
    async (records: DeferralRecord[]) => {
      await repository.recordDeferrals(records);
      return records.map(() => undefined);
    },
    { maxBatch: 10 * config.worker.concurrency, maxInFlight: 1 },
  );
  return {
    load,
    recordDeferral: (job, reason) => recordDeferral({ deliveryId: job.deliveryId, reason, at: new Date(), storedAt: storedAtOf(job) }),
    async record(attempt) {
      const recorded = await record(attempt);
      if (recorded === undefined) throw new Error(`Delivery ${attempt.deliveryId} does not exist.`);
      return recorded;
    },
  };
}

/**
 * How long a worker lets its jobs into a target's leased slots before it asks the gate again: how
 * late at most it notices a breaker that another worker's failures opened. A lease in use is
 * renewed in the background once three quarters of this have passed, so that a busy healthy
 * target's jobs never wait for Redis; after it runs out, the lease shrinks to the slots in use.
 */
const GATE_LEASE_RENEW_MS = 200;
/**
 * How long a job may wait in the worker for a slot of its target's lease when every leased slot is
 * taken, before it asks the gate by itself (and, the target being at its limit, is deferred). A
 * healthy target frees one of a worker's slots every few ms: a wait that short costs less than a
 * trip through the delayed set. Only as many jobs wait as the lease's slots should free meanwhile
 * (at the lease's average slot time), so a slow target's jobs do not wait at all.
 */
const GATE_LEASE_WAIT_MS = 20;

/** A job waiting for a slot of its target's lease; told whether it got one. */
interface LeaseWaiter {
  readonly jobId: string;
  readonly resolve: (leased: boolean) => void;
  /** Gives up waiting after GATE_LEASE_WAIT_MS; none while it waits for a renewal's answer. */
  timer?: NodeJS.Timeout;
}

/** This worker's share of one target's slots (the gate's lease, scripts.ts). */
interface TargetLease {
  readonly targetId: string;
  /** Slots the gate counts as this worker's. */
  held: number;
  /** The jobs in them, by job id, with when each went in (ms; the first is the oldest). */
  readonly running: Map<string, number>;
  /** Most slots this worker's jobs wanted at once since the last renewal (its next request). */
  peak: number;
  /** Until when jobs may go into a free slot without asking (ms); 0: the next job asks. */
  validUntil: number;
  /** Until when (ms) the target's jobs are let in one by one: the gate said it is not free for leases. */
  oneByOneUntil: number;
  /**
   * While a renewal is under way: the slots it asked to keep. No more jobs go in until the answer
   * (on a contended target those in use are all it keeps: the gate may give the others to another
   * worker).
   */
  renewing: number | false;
  /** Slots the last renewal asked for (the gate records it, for the other workers' shares). */
  asked: number;
  /** The last renewal got fewer slots than it asked for: the lease is at its share of the limit. */
  capped: boolean;
  /** The gate said the workers want more of the target's slots than its limit. */
  contended: boolean;
  /** How long its jobs held a slot, on average (ms, moving like the gate's); 0: not known yet. */
  avgMs: number;
  /** Leased jobs delivered since the gate last heard of them, and their time in all (ms). */
  successes: number;
  successMs: number;
  /** Jobs the gate had deferred that went into the lease's slots since its last renewal (sent with the next). */
  returned: string[];
  /**
   * Jobs waiting for a slot of the lease, first come first served: for the renewal under way, or
   * for one of its running jobs to end (as many as should get a slot within GATE_LEASE_WAIT_MS).
   */
  readonly waiting: LeaseWaiter[];
}

/** A job let in by the gate. */
const LET_IN: Admission = { admitted: true, probe: false };

export interface WorkerGate extends DeliveryGate {
  /** Waits for the verdicts still on their way and gives every leased slot back (the worker has no job left). */
  close(): Promise<void>;
}

/**
 * The target gate (packages/queue) over the worker's Redis connection. A target whose breaker is
 * closed (the usual case) is served from a lease: the worker holds as many of its slots as its
 * jobs wanted lately (within its share, when the workers want more than the limit) and lets its
 * jobs into them without a round trip, so a healthy target's callback starts at once; the lease
 * is renewed every GATE_LEASE_RENEW_MS (`leaseRenewMs`) while in use. A job that finds every
 * leased slot taken waits briefly for one to free (GATE_LEASE_WAIT_MS) or asks the gate by itself,
 * which defers it while the target is at its limit. A target whose breaker is not closed is asked
 * job by job, which is how its half-open probe works.
 * Everything the worker sends to the gate (verdicts, leases, admissions) is gathered across its
 * jobs: one script run per batch. If Redis answers an admission with an error (not an outage: the
 * worker's connection waits those out), the job goes in ungated rather than fail; a release that
 * fails leaves the slot to its lease.
 */
export function batchedTargetGate(
  deps: Pick<DeliveryWorkerDependencies, 'config' | 'connection' | 'logger'>,
  { leaseRenewMs = GATE_LEASE_RENEW_MS }: { leaseRenewMs?: number } = {},
): WorkerGate {
  const { config, logger } = deps;
  const gate = createTargetGate(deps.connection, {
    queuePrefix: config.queuePrefix,
    settings: {
      ...config.targetGate,
      leaseMs: 2 * config.callback.timeoutMs + config.callback.tokenTimeoutMs + GATE_LEASE_MARGIN_MS,
    },
  });
  // Names this worker's leased slots in Redis, unique among every worker sharing the queue.
  const holder = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const leases = new Map<string, TargetLease>();
  const leaseOf = (targetId: string): TargetLease => {
    let lease = leases.get(targetId);
    if (!lease) {
      lease = {
        targetId,
        held: 0,
        running: new Map(),
        peak: 0,
        validUntil: 0,
        oneByOneUntil: 0,
        renewing: false,
        asked: 0,
        capped: false,
        contended: false,
        waiting: [],
        avgMs: 0,
        successes: 0,
        successMs: 0,
        returned: [],
      };
      leases.set(targetId, lease);
    }
    return lease;
  };

  // One script run carries the releases, leases and admissions gathered meanwhile (scripts.ts). A
  // release lingers for the next call (GATE_RELEASE_LINGER_MS).
  type GateCall = { admit: GateEntry } | { release: GateRelease } | { lease: LeaseRequest };
  type GateAnswer = Admission | BreakerChange | LeaseGrant;
  const settle = createCoalescer(
    async (calls: GateCall[]): Promise<GateAnswer[]> => {
      const releases = calls.flatMap((call) => ('release' in call ? [call.release] : []));
      const leaseRequests = calls.flatMap((call) => ('lease' in call ? [call.lease] : []));
      const entries = calls.flatMap((call) => ('admit' in call ? [call.admit] : []));
      const { changes, grants, admissions } = await gate.settle(releases, entries, leaseRequests);
      changes.forEach((change, i) => {
        const { targetId } = releases[i]!;
        // This worker's lease of a target whose breaker just opened is not used again.
        if (change === 'opened' || change === 'reopened') {
          const lease = leases.get(targetId);
          if (lease) lease.validUntil = 0;
        }
        if (change === 'opened') logger.warn('target circuit breaker opened; its callbacks wait without attempts', { targetId });
        else if (change === 'reopened') logger.warn('target circuit breaker re-opened: the probe callback failed', { targetId });
        else if (change === 'closed') logger.info('target circuit breaker closed: the probe callback was delivered', { targetId });
      });
      let [released, granted, admitted] = [0, 0, 0];
      return calls.map((call) => ('release' in call ? changes[released++] : 'lease' in call ? grants[granted++]! : admissions[admitted++]!));
    },
    { maxBatch: 2 * config.worker.concurrency, maxInFlight: STATEMENTS_IN_FLIGHT },
  );

  // Verdicts and renewals on their way to the gate: close() waits for them before it gives the
  // leases back, so that no renewal sent earlier lands after that.
  const onTheirWay = new Set<Promise<void>>();
  const track = (call: Promise<void>): Promise<void> => {
    onTheirWay.add(call);
    void call.finally(() => onTheirWay.delete(call));
    return call;
  };
  /** Sends a verdict to the gate; `lingerMs`: how long it may wait for a call to ride on. */
  const report = (release: GateRelease, lingerMs: number): Promise<void> =>
    track(
      settle({ release }, lingerMs).then(
        () => undefined,
        (error: unknown) => {
          logger.warn('target gate release failed; the slot frees when its lease ends', {
            targetId: release.targetId,
            error: error instanceof Error ? error.message : String(error),
          });
        },
      ),
    );
  /**
   * Sends the lease's successes the gate has not heard of, as one release: with the lease's
   * renewal, and before any other verdict of its target, so that the breaker sees them in order.
   */
  const reportSuccesses = (lease: TargetLease, lingerMs: number): void => {
    if (lease.successes === 0) return;
    void report(
      { targetId: lease.targetId, jobId: holder, verdict: 'success', durationMs: lease.successMs / lease.successes, times: lease.successes },
      lingerMs,
    );
    lease.successes = 0;
    lease.successMs = 0;
  };

  /** Lets a job into a free slot of the lease, if the lease may still be used. */
  const takeSlot = (lease: TargetLease, jobId: string): boolean => {
    const now = Date.now();
    const slots = lease.renewing === false ? lease.held : Math.min(lease.held, lease.renewing);
    if (now >= lease.validUntil || lease.running.size >= slots) return false;
    lease.running.set(jobId, now);
    lease.peak = Math.max(lease.peak, lease.running.size);
    if (now >= lease.validUntil - leaseRenewMs / 4) renew(lease);
    return true;
  };

  /**
   * Asks the gate for the lease again. While the lease is valid and its target not contended, the
   * worker keeps every slot it holds (jobs may take them until the answer comes) and asks for as
   * many as its jobs wanted at once lately, waiting ones included; otherwise it keeps the slots
   * in use and takes no more until the answer (the gate may give the others to a worker under its
   * share), and asks for what its jobs wanted lately, or (`shrink`, when no job waits) for no
   * more than the slots in use.
   */
  const renew = (lease: TargetLease, shrink = false): void => {
    if (lease.renewing !== false) return;
    const inUse = lease.running.size;
    const keep = Date.now() < lease.validUntil && !lease.contended ? lease.held : inUse;
    const want = shrink ? keep : Math.max(keep, lease.peak, inUse + lease.waiting.length);
    [lease.renewing, lease.asked, lease.peak] = [keep, want, inUse];
    reportSuccesses(lease, 0);
    const [since = 0] = lease.running.values();
    const request: LeaseRequest = { targetId: lease.targetId, holder, keep, want, since, returned: lease.returned.splice(0) };
    const answered = (grant: LeaseGrant): void => {
      [lease.held, lease.capped, lease.contended] = [grant.held, grant.held < want, grant.contended];
      const now = Date.now();
      if (grant.free) lease.validUntil = now + leaseRenewMs;
      else [lease.validUntil, lease.oneByOneUntil] = [0, now + leaseRenewMs];
      settleWaiting(lease, grant.free && !lease.capped);
    };
    const failed = (error: unknown): void => {
      // The leased slots stay taken in Redis until renewed or their ttl passes; the jobs ask one by one.
      lease.validUntil = 0;
      logger.warn('target gate lease failed', { targetId: lease.targetId, error: error instanceof Error ? error.message : String(error) });
      settleWaiting(lease, false);
    };
    void track((settle({ lease: request }) as Promise<LeaseGrant>).then(answered, failed));
  };
  /** Tells the waiter whether it got a slot of the lease, and takes it out of the line. */
  const endWait = (lease: TargetLease, waiter: LeaseWaiter, leased: boolean): void => {
    clearTimeout(waiter.timer);
    const i = lease.waiting.indexOf(waiter);
    if (i >= 0) lease.waiting.splice(i, 1);
    waiter.resolve(leased);
  };
  /** Puts the job in line for a slot of the lease; told whether it got one. */
  const inLine = (lease: TargetLease, jobId: string): Promise<boolean> =>
    new Promise<boolean>((resolve) => {
      lease.waiting.push({ jobId, resolve });
    });
  /** Lets the first jobs in line into the lease's free slots. */
  const serveWaiting = (lease: TargetLease): void => {
    while (lease.waiting.length > 0 && takeSlot(lease, lease.waiting[0]!.jobId)) endWait(lease, lease.waiting[0]!, true);
  };
  /**
   * The jobs in line wait on for a slot of the lease while it is good: as many as its slots should
   * free within GATE_LEASE_WAIT_MS at their average time (as many as it holds while that is not
   * known), each for that long at most. The others ask the gate one by one.
   */
  const waitForSlots = (lease: TargetLease): void => {
    const freeing = lease.avgMs > 0 ? Math.floor((GATE_LEASE_WAIT_MS * lease.held) / lease.avgMs) : lease.held;
    const waitOn = Date.now() < lease.validUntil ? freeing : 0;
    for (const waiter of lease.waiting.slice(0, waitOn)) waiter.timer ??= setTimeout(() => endWait(lease, waiter, false), GATE_LEASE_WAIT_MS);
    for (const waiter of lease.waiting.slice(waitOn)) endWait(lease, waiter, false);
  };
  /**
   * The renewal is over: its waiting jobs take the lease's free slots. If the gate granted all it
   * asked for, the jobs that came meanwhile wait for the next renewal, which asks for them too.
   */
  const settleWaiting = (lease: TargetLease, grantedAll: boolean): void => {
    lease.renewing = false;
    serveWaiting(lease);
    if (grantedAll && lease.waiting.length > 0) renew(lease);
    else waitForSlots(lease);
  };

  // Leases that ran out shrink to the slots in use, whose deadlines this renews (a long callback
  // keeps its slot); those left with none are forgotten.
  const renewIdleLeases = setInterval(() => {
    const now = Date.now();
    for (const lease of leases.values()) {
      if (lease.renewing !== false || now < lease.validUntil) continue;
      // A lease with no slot may still have asked for some: the gate forgets that too, unless
      // its jobs wanted more since (they were deferred): then it asks for them again.
      if (lease.held > 0 || lease.asked > 0) renew(lease, lease.peak <= lease.running.size);
      else {
        reportSuccesses(lease, 0);
        if (lease.running.size === 0) leases.delete(lease.targetId);
      }
    }
  }, leaseRenewMs);
  renewIdleLeases.unref();

  // Targets whose jobs the gate turned away lately, with until when (ms).
  const turnedAway = new Map<string, number>();
  let sweepAtSize = TURNED_AWAY_SWEEP_SIZE;
  const rememberTurnedAway = (targetId: string, delayMs: number): void => {
    const now = Date.now();
    if (turnedAway.size >= sweepAtSize) {
      for (const [id, until] of turnedAway) if (until <= now) turnedAway.delete(id);
      sweepAtSize = Math.max(TURNED_AWAY_SWEEP_SIZE, 2 * turnedAway.size);
    }
    turnedAway.set(targetId, now + Math.max(delayMs, TURNED_AWAY_MEMORY_MS));
  };
  const expectsAdmission = (targetId: string): boolean => {
    const until = turnedAway.get(targetId);
    if (until === undefined) return true;
    if (until > Date.now()) return false;
    turnedAway.delete(targetId);
    return true;
  };
  /** Asks the gate about this one job. */
  const admitOne = async (targetId: string, jobId: string): Promise<Admission> => {
    try {
      const admission = (await settle({ admit: { targetId, jobId } })) as Admission;
      if (!admission.admitted) rememberTurnedAway(targetId, admission.delayMs);
      // A probe means the breaker is half-open: the target's other jobs are about to be turned away.
      else if (admission.probe) rememberTurnedAway(targetId, 0);
      return admission;
    } catch (error) {
      logger.warn('target gate unavailable; callback sent ungated', { targetId, error: error instanceof Error ? error.message : String(error) });
      return LET_IN;
    }
  };

  return {
    expectsAdmission,
    async admit(targetId, jobId, returning = false): Promise<Admission> {
      // A free slot of a valid lease is this worker's to use. Without one, the job waits in line
      // for the lease's slots (and counts in what the lease asks for next, so that a worker whose
      // jobs are deferred gets its share), unless the gate said the target is not free for
      // leases (its breaker is not closed): then the job asks by itself. A job the gate deferred
      // before that goes into a leased slot is named in the lease's next renewal, which takes it
      // off the target's deferred jobs.
      const leasedIn = (lease: TargetLease): Admission => {
        if (returning) lease.returned.push(jobId);
        return LET_IN;
      };
      const existing = leases.get(targetId);
      if (existing && takeSlot(existing, jobId)) return leasedIn(existing);
      if (existing && Date.now() < existing.oneByOneUntil) return admitOne(targetId, jobId);
      const lease = existing ?? leaseOf(targetId);
      lease.peak = Math.max(lease.peak, lease.running.size + lease.waiting.length + 1);
      const leased = inLine(lease, jobId);
      // A lease at its share waits for its own slots to free; another asks the gate for more.
      if (Date.now() < lease.validUntil && lease.capped && lease.renewing === false) waitForSlots(lease);
      else renew(lease);
      return (await leased) ? leasedIn(lease) : admitOne(targetId, jobId);
    },
    async release(targetId, jobId, verdict, durationMs) {
      const lease = leases.get(targetId);
      if (!lease?.running.delete(jobId)) return report({ targetId, jobId, verdict, durationMs }, GATE_RELEASE_LINGER_MS);
      if (verdict !== 'neutral') lease.avgMs = nextSlotTime(lease.avgMs, durationMs);
      // A leased slot is free at once. The gate only needs the verdict, for the breaker: a success
      // waits for the lease's renewal; a failure (no answer) or another answer goes at once, and a
      // failure sends the target's next job to ask the gate, which may have opened the breaker. A
      // neutral end (no POST) counts nowhere.
      if (verdict === 'success') {
        lease.successes += 1;
        lease.successMs += durationMs;
      } else if (verdict !== 'neutral') {
        reportSuccesses(lease, GATE_RELEASE_LINGER_MS);
        void report({ targetId, jobId, verdict, durationMs }, GATE_RELEASE_LINGER_MS);
        if (verdict === 'failure') {
          lease.validUntil = 0;
          for (const waiter of [...lease.waiting]) endWait(lease, waiter, false);
        }
      }
      serveWaiting(lease);
    },
    async close() {
      clearInterval(renewIdleLeases);
      for (const lease of leases.values()) reportSuccesses(lease, 0);
      await Promise.allSettled([...onTheirWay]);
      const held = [...leases.values()].filter((lease) => lease.held > 0 || lease.asked > 0);
      leases.clear();
      if (held.length === 0) return;
      await gate
        .settle(
          [],
          [],
          held.map((lease) => ({ targetId: lease.targetId, holder, keep: 0, want: 0, since: 0, returned: lease.returned })),
        )
        .catch((error: unknown) => {
          logger.warn('could not give the target gate its leased slots back; they free when their lease ends', {
            error: error instanceof Error ? error.message : String(error),
          });
        });
    },
  };
}

function authStrategyFor(target: DeliveryTarget, deps: DeliveryWorkerDependencies, outbound: OutboundClient): CallbackAuthStrategy {
  return createAuthStrategy(
    { targetId: target.id, ...target.auth },
    {
      redis: deps.connection,
      keyPrefix: `${deps.config.queuePrefix}:`,
      // Keys the token cache's key names and encryption; a rotation only means each token is fetched once more.
      tokenCacheSecret: deps.config.secretsKey,
      tokenRequestTimeoutMs: deps.config.callback.tokenTimeoutMs,
      onTokenRequest: () => deps.metrics.oauthTokenRequested(),
      outbound,
    },
  );
}
