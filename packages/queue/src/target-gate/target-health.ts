import type { RedisConnection } from '../redis';
import { firstConnect } from '../redis';
import { breakersKey, DEFERRED_GRACE_MS, STALE_BREAKER_MS, targetKeys } from './target-gate';

/** closed: callbacks flow; open: every job is deferred; half_open: one probe at a time tests the target. */
export type BreakerState = 'closed' | 'open' | 'half_open';

export interface BreakerHealth {
  state: BreakerState;
  /** Failures in a row so far (closed), toward TARGET_BREAKER_FAILURES. */
  consecutiveFailures: number;
  /** When it opened (last re-opened), while open or half-open. */
  openedAt: string | null;
  /** When it half-opens (open) or half-opened (half_open). */
  halfOpenAt: string | null;
  /** A probe callback is in flight (half_open). */
  probeInFlight: boolean;
}

/**
 * A target's delivery health as the gate sees it, read from Redis. An object so that more facts
 * (the last success, say) can join without changing the shape of the others.
 */
export interface TargetHealth {
  breaker: BreakerHealth;
  /**
   * Slots of the target taken now, across every worker (TARGET_MAX_IN_FLIGHT bounds it): callbacks
   * in flight, and the free slots a worker's lease holds for its next jobs (given back within about
   * half a second once they stop coming).
   */
  inFlight: number;
  /** Jobs of the target waiting after a deferral (breaker open or target busy), not yet let in again. */
  deferred: number;
  /**
   * While the target waits out its receiver's `Retry-After` (a 429 or 503 asked for a pause, and
   * its breaker is open for it): until when. Null otherwise.
   */
  pausedUntil: string | null;
  /**
   * Flow control: the in-flight window the receiver's pushback (429, 503, timeouts) left, below
   * the target's limit, growing back with each success; null at the full limit.
   */
  window: number | null;
}

/** Reads one target's health in one round trip. */
export async function readTargetHealth(redis: RedisConnection, queuePrefix: string, targetId: string, now = Date.now()): Promise<TargetHealth> {
  const keys = targetKeys(queuePrefix, targetId);
  await firstConnect(redis);
  const results = await redis
    .multi()
    .hmget(keys.breaker, 'reopenAt', 'openedAt', 'probe', 'probeUntil', 'consecutive', 'pausedUntil', 'flowLimit')
    .zcount(keys.inflight, `(${now}`, '+inf')
    .zcount(keys.deferred, `(${now - DEFERRED_GRACE_MS}`, '+inf')
    .hvals(keys.leased)
    .exec();
  if (!results) throw new Error('the target health read was aborted');
  for (const [error] of results) if (error) throw error;
  const [reopenAt, openedAt, probe, probeUntil, consecutive, pausedUntil, flowLimit] = results[0]![1] as Array<string | null>;
  const reopen = reopenAt === null ? null : Number(reopenAt);
  const state: BreakerState = reopen === null ? 'closed' : now < reopen ? 'open' : 'half_open';
  return {
    breaker: {
      state,
      consecutiveFailures: Number(consecutive ?? 0),
      openedAt: openedAt === null ? null : new Date(Number(openedAt)).toISOString(),
      halfOpenAt: reopen === null ? null : new Date(reopen).toISOString(),
      probeInFlight: state === 'half_open' && probe !== null && Number(probeUntil ?? 0) > now,
    },
    inFlight: Number(results[1]![1]) + leasedSlots(results[3]![1] as string[], now),
    deferred: Number(results[2]![1]),
    pausedUntil: pausedUntil !== null && Number(pausedUntil) > now ? new Date(Number(pausedUntil)).toISOString() : null,
    window: flowLimit === null ? null : Math.max(1, Math.floor(Number(flowLimit))),
  };
}

/** How many targets' breakers are open and half-open now (closed ones are not counted: there is no list of targets in Redis). */
export async function countBreakers(redis: RedisConnection, queuePrefix: string, now = Date.now()): Promise<{ open: number; half_open: number }> {
  const key = breakersKey(queuePrefix);
  await firstConnect(redis);
  const results = await redis
    .multi()
    .zcount(key, `(${now}`, '+inf')
    .zcount(key, now - STALE_BREAKER_MS, now)
    .exec();
  if (!results) throw new Error('the breaker count was aborted');
  for (const [error] of results) if (error) throw error;
  return { open: Number(results[0]![1]), half_open: Number(results[1]![1]) };
}

/** Slots the workers' leases hold now (target-gate.ts: `slots:deadline:since` per worker). */
function leasedSlots(leases: string[], now: number): number {
  return leases.reduce((sum, lease) => {
    const [slots, deadline] = lease.split(':').map(Number) as [number, number];
    return deadline > now ? sum + slots : sum;
  }, 0);
}
