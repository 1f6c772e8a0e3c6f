import { attemptChangesTargetHealth, shouldAutoDisable, type TargetHealthSeen } from './target-health';

/** What one callback attempt came to, as the decision needs it. */
export interface AttemptFacts {
  /** The callback got its HTTP 200. */
  delivered: boolean;
  /** A failure's kind (timeout, http_status, target_unavailable, …) and message. */
  errorKind?: string;
  errorMessage?: string;
  /** A failure's own word on whether trying again can help (false: not until someone changes the target). */
  retryable?: boolean;
  startedAt: Date;
  /** The target's health as loaded; undefined when there was no usable target to judge. */
  targetHealth: TargetHealthSeen | undefined;
  /** Tries counted before this one (replays included), and the most the delivery's job makes. */
  attemptsMade: number;
  maxAttempts: number;
  /** TARGET_AUTO_DISABLE_AFTER in ms: how long every attempt to a target may fail before it is switched off; 0 never. */
  autoDisableAfterMs: number;
}

/**
 * The delivery's next state after an attempt: `delivered`; `retry` (pending, the next try after
 * the queue's backoff); or `failed` for good, because trying again cannot help (`not-retryable`:
 * the failure says so, or this try switches its failing target off: `disableTarget`) or because
 * this was the last try (`attempts-used`). `changesTargetHealth`: the target's stored health must
 * be written.
 */
export type AttemptDecision =
  | { readonly next: 'delivered'; readonly changesTargetHealth: boolean }
  | { readonly next: 'retry'; readonly changesTargetHealth: boolean; readonly errorMessage: string }
  | {
      readonly next: 'failed';
      readonly why: 'not-retryable' | 'attempts-used';
      readonly changesTargetHealth: boolean;
      readonly errorMessage: string;
      readonly disableTarget: boolean;
    };

// Failures that say nothing about the merchant's endpoint: Herald's own, or a target already off.
const NOT_THE_TARGETS_FAULT: ReadonlySet<string> = new Set(['internal', 'target_unavailable']);

/** Decides what an attempt makes of its delivery and target: a pure rule, no I/O. */
export function decideAttempt(facts: AttemptFacts): AttemptDecision {
  const { targetHealth, startedAt } = facts;
  const healthChange = (succeeded: boolean, disableTarget: boolean): boolean =>
    targetHealth !== undefined && attemptChangesTargetHealth(targetHealth, { succeeded, startedAt, disableTarget });
  if (facts.delivered) return { next: 'delivered', changesTargetHealth: healthChange(true, false) };

  const message = facts.errorMessage ?? 'the attempt failed';
  const disableTarget =
    targetHealth !== undefined &&
    !NOT_THE_TARGETS_FAULT.has(facts.errorKind ?? '') &&
    shouldAutoDisable(targetHealth.failingSince, startedAt, facts.autoDisableAfterMs);
  if (disableTarget) {
    // The last step of a target that keeps failing: no retry of this delivery, and the target's
    // other deliveries fail as target_unavailable at their next try, until it is switched on again.
    return {
      next: 'failed',
      why: 'not-retryable',
      disableTarget,
      changesTargetHealth: true,
      errorMessage: `${message}; every attempt since ${targetHealth.failingSince!.toISOString()} failed, so the notification target is auto-disabled`,
    };
  }
  const lastTry = facts.attemptsMade + 1 >= facts.maxAttempts;
  const changesTargetHealth = healthChange(false, false);
  if (facts.retryable === false) return { next: 'failed', why: 'not-retryable', disableTarget: false, changesTargetHealth, errorMessage: message };
  if (lastTry) return { next: 'failed', why: 'attempts-used', disableTarget: false, changesTargetHealth, errorMessage: message };
  return { next: 'retry', changesTargetHealth, errorMessage: message };
}
