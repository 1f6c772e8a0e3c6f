import { createCoalescer } from '../coalescer';
import type { RedisConnection } from '../redis';
import {
  createTargetGate,
  type Admission,
  type BreakerChange,
  type GateEntry,
  type GateRelease,
  type GateVerdict,
  type LeaseGrant,
  type LeaseRequest,
  nextSlotTime,
  type TargetLimits,
} from './target-gate';
import { emptyLease, TurnedAwayTargets, type LeaseWaiter, type TargetLease } from './target-lease';
import { resolveWorkerGateOptions, type WorkerGateOptions } from './worker-gate-options';

/** The target gate as one worker process uses it, one job at a time (the batching is underneath). */
export interface WorkerGate {
  /**
   * Lets the job in to its target or defers it. `returning`: the gate deferred the job before, so
   * it may count among its target's deferred jobs (a leased slot it goes into takes it off them).
   */
  admit(targetId: string, jobId: string, returning?: boolean): Promise<Admission>;
  /**
   * Whether `admit` will most likely let a job of the target in (no job of it was turned away
   * lately): the worker then loads the delivery while the gate decides.
   */
  expectsAdmission(targetId: string): boolean;
  /**
   * Whether this worker knows the target's own in-flight limit (setLimit). Until it does, the
   * caller sets it before the target's first admission, so that no job goes in over it.
   */
  knowsLimit(targetId: string): boolean;
  /**
   * The target's in-flight limit and rate as its delivery policy says now (the worker reads the
   * policy with each job): this worker's admissions and lease renewals of the target carry them to
   * the gate. A target with a rate is let in job by job, each job taking a token of its bucket.
   */
  setLimit(targetId: string, limits: Required<TargetLimits>): void;
  /**
   * Gives the job's slot back with how the job ended (for the breaker). Never rejects: a slot it
   * could not free runs out with its lease. `pauseMs`: the receiver asked for a pause (Retry-After
   * on a 429 or 503): the whole target waits that long (GateRelease.pauseMs), this worker's lease
   * of it at once.
   */
  release(targetId: string, jobId: string, verdict: GateVerdict, durationMs: number, pauseMs?: number): Promise<void>;
  /**
   * Stops renewing, waits for the verdicts still on their way, then gives the gate back every
   * lease this worker holds (giveBackLeases): the worker has no job left.
   */
  close(): Promise<void>;
}

/** A job let in by the gate. */
const LET_IN: Admission = { admitted: true, probe: false };

/** Most targets whose limit a worker remembers; past it, the memo starts again empty (each is learnt again from the next load). */
const LIMITS_MAX = 10_000;

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * The target gate (target-gate.ts) over a worker's Redis connection. A target whose breaker is
 * closed (the usual case) is served from a lease: the worker holds as many of its slots as its
 * jobs wanted lately (within its share, when the workers want more than the limit) and lets its
 * jobs into them without a round trip, so a healthy target's callback starts at once; the lease
 * is renewed every `leaseRenewMs` while in use. A job that finds every leased slot taken waits
 * briefly for one to free (`leaseWaitMs`) or asks the gate by itself, which defers it while the
 * target is at its limit. A target whose breaker is not closed is asked job by job, which is how
 * its half-open probe works.
 * Everything the worker sends to the gate (verdicts, leases, admissions) is gathered across its
 * jobs: one script run per batch. If Redis answers an admission with an error (not an outage: a
 * worker's connection waits those out), the job goes in ungated rather than fail; a release that
 * fails leaves the slot to its lease.
 */
export function createWorkerGate(connection: RedisConnection, options: WorkerGateOptions): WorkerGate {
  const { queuePrefix, settings, logger, leaseRenewMs, leaseWaitMs, releaseLingerMs, maxBatch, maxRunsInFlight, holder } = resolveWorkerGateOptions(options);
  const gate = createTargetGate(connection, { queuePrefix, settings });
  const leases = new Map<string, TargetLease>();
  const turnedAway = new TurnedAwayTargets();
  // Each target's own in-flight limit and rate, as its policy said at this worker's last load of it.
  const limits = new Map<string, Required<TargetLimits>>();
  /** The most of the target's slots this worker's jobs may use at once, as far as it knows (0: no limit). */
  const limitOf = (targetId: string): number => {
    const limit = limits.get(targetId)?.maxInFlight ?? settings.maxInFlight;
    return limit > 0 ? limit : Number.POSITIVE_INFINITY;
  };
  /** The target's limits to hand the gate: its own, or none known (the gate then applies TARGET_MAX_IN_FLIGHT and no rate). */
  const limitArg = (targetId: string): TargetLimits => limits.get(targetId) ?? {};

  // One script run carries the releases, leases and admissions gathered meanwhile (commands/gate.lua).
  // A release lingers for the next call (releaseLingerMs).
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
    { maxBatch, maxInFlight: maxRunsInFlight },
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
          logger.warn('target gate release failed; the slot frees when its lease ends', { targetId: release.targetId, error: messageOf(error) });
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
    const slots = Math.min(lease.renewing === false ? lease.held : Math.min(lease.held, lease.renewing), limitOf(lease.targetId));
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
    // A limit lowered since the lease was granted: the slots beyond it go back as their jobs end.
    const keep = Date.now() < lease.validUntil && !lease.contended && lease.held <= limitOf(lease.targetId) ? lease.held : inUse;
    const want = shrink ? keep : Math.max(keep, lease.peak, inUse + lease.waiting.length);
    [lease.renewing, lease.asked, lease.peak] = [keep, want, inUse];
    reportSuccesses(lease, 0);
    const [since = 0] = lease.running.values();
    const request: LeaseRequest = { targetId: lease.targetId, holder, keep, want, since, returned: lease.returned.splice(0), ...limitArg(lease.targetId) };
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
      logger.warn('target gate lease failed', { targetId: lease.targetId, error: messageOf(error) });
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
   * free within leaseWaitMs at their average time (as many as it holds while that is not known),
   * each for that long at most. The others ask the gate one by one.
   */
  const waitForSlots = (lease: TargetLease): void => {
    const freeing = lease.avgMs > 0 ? Math.floor((leaseWaitMs * lease.held) / lease.avgMs) : lease.held;
    const waitOn = Date.now() < lease.validUntil ? freeing : 0;
    for (const waiter of lease.waiting.slice(0, waitOn)) waiter.timer ??= setTimeout(() => endWait(lease, waiter, false), leaseWaitMs);
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

  /** Asks the gate about this one job. */
  const admitOne = async (targetId: string, jobId: string): Promise<Admission> => {
    try {
      const admission = (await settle({ admit: { targetId, jobId, ...limitArg(targetId) } })) as Admission;
      if (!admission.admitted) turnedAway.remember(targetId, admission.delayMs);
      // A probe means the breaker is half-open: the target's other jobs are about to be turned away.
      else if (admission.probe) turnedAway.remember(targetId, 0);
      return admission;
    } catch (error) {
      logger.warn('target gate unavailable; callback sent ungated', { targetId, error: messageOf(error) });
      return LET_IN;
    }
  };

  /** Gives the gate back every lease this worker holds (or asked for), in one script run. */
  const giveBackLeases = async (): Promise<void> => {
    const held = [...leases.values()].filter((lease) => lease.held > 0 || lease.asked > 0);
    leases.clear();
    if (held.length === 0) return;
    await gate.giveBackLeases(holder, held).catch((error: unknown) => {
      logger.warn('could not give the target gate its leased slots back; they free when their lease ends', { error: messageOf(error) });
    });
  };

  return {
    expectsAdmission: (targetId) => turnedAway.expectsAdmission(targetId),
    knowsLimit: (targetId) => limits.has(targetId),
    setLimit(targetId, own) {
      const known = limits.get(targetId);
      if (known?.maxInFlight === own.maxInFlight && known.maxRatePerSecond === own.maxRatePerSecond) return;
      if (limits.size >= LIMITS_MAX) limits.clear();
      limits.set(targetId, { maxInFlight: own.maxInFlight, maxRatePerSecond: own.maxRatePerSecond });
    },
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
      // A rate-limited target holds no lease: each of its jobs takes a token from the gate.
      if ((limits.get(targetId)?.maxRatePerSecond ?? 0) > 0) return admitOne(targetId, jobId);
      const existing = leases.get(targetId);
      if (existing && takeSlot(existing, jobId)) return leasedIn(existing);
      if (existing && Date.now() < existing.oneByOneUntil) return admitOne(targetId, jobId);
      let lease = existing;
      if (!lease) {
        lease = emptyLease(targetId);
        leases.set(targetId, lease);
      }
      lease.peak = Math.max(lease.peak, lease.running.size + lease.waiting.length + 1);
      const leased = inLine(lease, jobId);
      // A lease at its share waits for its own slots to free; another asks the gate for more.
      if (Date.now() < lease.validUntil && lease.capped && lease.renewing === false) waitForSlots(lease);
      else renew(lease);
      return (await leased) ? leasedIn(lease) : admitOne(targetId, jobId);
    },
    async release(targetId, jobId, verdict, durationMs, pauseMs = 0) {
      const lease = leases.get(targetId);
      const paused = pauseMs > 0 ? { pauseMs } : {};
      // A pause goes to the gate at once, lingering for no other call.
      if (!lease?.running.delete(jobId)) return report({ targetId, jobId, verdict, durationMs, ...paused }, pauseMs > 0 ? 0 : releaseLingerMs);
      if (verdict !== 'neutral') lease.avgMs = nextSlotTime(lease.avgMs, durationMs);
      // A leased slot is free at once. The gate only needs the verdict, for the breaker: a success
      // waits for the lease's renewal; a failure (no answer) or another answer goes at once, and a
      // failure sends the target's next job to ask the gate, which may have opened the breaker. A
      // neutral end (no POST) counts nowhere.
      if (verdict === 'success') {
        lease.successes += 1;
        lease.successMs += durationMs;
      } else if (verdict !== 'neutral') {
        reportSuccesses(lease, releaseLingerMs);
        void report({ targetId, jobId, verdict, durationMs, ...paused }, pauseMs > 0 ? 0 : releaseLingerMs);
        // No answer, a receiver pushing back or a pause asked for: this worker's next jobs of the
        // target ask the gate, which may have opened the breaker or narrowed the window.
        if (verdict === 'failure' || verdict === 'throttled' || pauseMs > 0) {
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
      await giveBackLeases();
    },
  };
}
