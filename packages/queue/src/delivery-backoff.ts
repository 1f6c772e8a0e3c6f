import type { BackoffStrategy } from 'bullmq';

/**
 * The backoff type of delivery jobs. It is not one of BullMQ's built-in types, so BullMQ asks the
 * worker's `settings.backoffStrategy` (deliveryBackoffStrategy) for every retry's delay.
 */
export const DELIVERY_BACKOFF_TYPE = 'herald-delivery';

/** How long a failed callback waits before its next try. */
export interface DeliveryBackoffPolicy {
  /** Wait before the first retry; each later retry waits twice as long as the one before, up to backoffMaxMs. */
  backoffDelayMs: number;
  /** Longest wait between two tries: the doubling stops there. */
  backoffMaxMs: number;
  /** Share of each wait drawn at random (0 to 1): a wait lies between (1 - jitter) and 1 times its nominal value. */
  backoffJitter: number;
  /** Longest wait a merchant's Retry-After can ask for; a longer one is cut to this. */
  retryAfterMaxMs: number;
}

/**
 * What a failed attempt can tell the backoff: the merchant asked for this wait (HTTP Retry-After),
 * and the longest wait of its target's delivery policy as read for this attempt (the target's own,
 * or DELIVERY_BACKOFF_MAX_MS), so that a policy changed while jobs wait applies from their next try.
 */
export interface RetryAfterHint {
  readonly retryAfterMs?: number;
  readonly backoffMaxMs?: number;
}

/**
 * The wait before retry number `attemptsMade` (1 for the first retry): exponential with jitter,
 * computed as BullMQ's own `exponential` type does, then held at backoffMaxMs, so that a long
 * retry window is spent in tries every few hours rather than in ever longer silences.
 */
export function exponentialBackoffMs(attemptsMade: number, policy: DeliveryBackoffPolicy, random: () => number = Math.random): number {
  const nominal = Math.min(Math.round(2 ** (attemptsMade - 1) * policy.backoffDelayMs), policy.backoffMaxMs);
  if (policy.backoffJitter <= 0) return nominal;
  return Math.floor(random() * nominal * policy.backoffJitter + nominal * (1 - policy.backoffJitter));
}

/**
 * The backoff strategy of the delivery worker (BullMQ `settings.backoffStrategy`). The delay is
 * the exponential one, unless the failed attempt carries a Retry-After (429 or 503): then it is the
 * longer of the two, Retry-After being cut to `retryAfterMaxMs`. Never shorter than the
 * exponential delay, so that "Retry-After: 0" cannot make a merchant that is down a busy loop.
 */
export function deliveryBackoffStrategy(policy: DeliveryBackoffPolicy, random: () => number = Math.random): BackoffStrategy {
  return (attemptsMade, _type, error) => {
    const hint = error as RetryAfterHint | undefined;
    const backoffMaxMs = hint?.backoffMaxMs;
    const exponential = exponentialBackoffMs(attemptsMade, backoffMaxMs === undefined ? policy : { ...policy, backoffMaxMs }, random);
    const asked = hint?.retryAfterMs;
    if (asked === undefined || !Number.isFinite(asked)) return exponential;
    return Math.max(exponential, Math.min(asked, policy.retryAfterMaxMs));
  };
}
