/** Why a target was switched off by Herald rather than by an admin. */
export const AUTO_DISABLED_REASON = 'auto-disabled';

/**
 * Whether a failed attempt is the one that switches its target off: every attempt to the target
 * has failed since `failingSince` (no 200 since then), and that run of failures has lasted at least
 * `afterMs` by the time of this attempt. `afterMs` 0 turns the rule off; a target with no run of
 * failures yet (`failingSince` null: this failure starts one) is never switched off.
 */
export function shouldAutoDisable(failingSince: Date | null, failedAt: Date, afterMs: number): boolean {
  if (afterMs <= 0 || failingSince === null) return false;
  return failedAt.getTime() - failingSince.getTime() >= afterMs;
}

/**
 * How stale a target's stored last success may be while it keeps succeeding: it is rewritten at
 * most this often, so that a busy, healthy target does not cost a row write per batch of attempts.
 */
const LAST_SUCCESS_PRECISION_MS = 60_000;

/** A target's health as stored when its attempt was loaded. */
export interface TargetHealthSeen {
  /** Start of the current run of failed attempts; null when the last attempt succeeded. */
  failingSince: Date | null;
  lastSuccessAt: Date | null;
}

/** A target's health and switch-off state as stored: what the health rule reads and writes. */
export interface StoredTargetHealth extends TargetHealthSeen {
  enabled: boolean;
  disabledReason: string | null;
  disabledAt: Date | null;
}

/** One recorded attempt to a target, as the health rule needs it. */
export interface TargetAttemptOutcome {
  succeeded: boolean;
  startedAt: Date;
  /** The worker decided this failure switches its target off (decideAttempt's disableTarget). */
  disableTarget: boolean;
}

/**
 * A target's stored health after a batch of its attempts, or null when the batch changes nothing
 * (so nothing is written). A 200 ends the run of failures and moves the last success forward (never
 * back: an older success recorded late keeps the newer time), rewritten only past
 * LAST_SUCCESS_PRECISION_MS; a failure starts a run unless one is going; a failure the worker
 * marked `disableTarget` switches off (reason AUTO_DISABLED_REASON, at `now`) a target that is
 * still on and still failing, unless a 200 of the same batch says it answers. `autoDisabled`: this
 * batch switched it off.
 */
export function targetHealthAfter(
  stored: StoredTargetHealth,
  attempts: readonly TargetAttemptOutcome[],
  now: Date,
): { next: StoredTargetHealth; autoDisabled: boolean } | null {
  const succeeded = attempts.filter((a) => a.succeeded);
  const failed = attempts.filter((a) => !a.succeeded);
  const disable = attempts.some((a) => a.disableTarget);
  const lastSuccess = latest(succeeded.map((a) => a.startedAt));
  const firstFailure = earliest(failed.map((a) => a.startedAt));
  const changes =
    lastSuccess !== null
      ? stored.failingSince !== null || stored.lastSuccessAt === null || stored.lastSuccessAt.getTime() < lastSuccess.getTime() - LAST_SUCCESS_PRECISION_MS
      : stored.failingSince === null || disable;
  if (!changes) return null;
  const autoDisabled = disable && lastSuccess === null && stored.enabled && stored.failingSince !== null;
  return {
    autoDisabled,
    next: {
      lastSuccessAt: latest([stored.lastSuccessAt, lastSuccess]),
      failingSince: lastSuccess !== null ? null : (stored.failingSince ?? firstFailure),
      enabled: autoDisabled ? false : stored.enabled,
      disabledReason: autoDisabled ? AUTO_DISABLED_REASON : stored.disabledReason,
      disabledAt: autoDisabled ? now : stored.disabledAt,
    },
  };
}

/**
 * Whether an attempt changes its target's stored health (targetHealthAfter), judged from the
 * health seen when the attempt was loaded; an auto-disable always writes. In the steady state (a
 * target that keeps answering, or keeps failing) nothing changes, and the worker skips the health
 * write. What another worker wrote since the load is caught up by the next attempt that sees it.
 */
export function attemptChangesTargetHealth(seen: TargetHealthSeen, attempt: TargetAttemptOutcome): boolean {
  if (attempt.disableTarget) return true;
  // The switch-off state plays no part in whether health changes when nothing is disabled.
  const stored: StoredTargetHealth = { ...seen, enabled: true, disabledReason: null, disabledAt: null };
  return targetHealthAfter(stored, [attempt], attempt.startedAt) !== null;
}

function latest(times: ReadonlyArray<Date | null>): Date | null {
  return times.reduce<Date | null>((a, b) => (b !== null && (a === null || b.getTime() > a.getTime()) ? b : a), null);
}

function earliest(times: readonly Date[]): Date | null {
  return times.reduce<Date | null>((a, b) => (a === null || b.getTime() < a.getTime() ? b : a), null);
}

/** Why a target is off when no rule switched it off: support or the merchant's administrator did. */
const SWITCHED_OFF_REASON = 'switched-off';

/** How long a run of failures lasts before the target's owner is warned that auto-disable is coming. */
export const AUTO_DISABLE_WARNING_AFTER_MS = 86_400_000;

/** What a target's owner is told of its switch-off state and of the auto-disable rule. */
export interface TargetOutlook {
  /** Null while the target is on; `auto-disabled` (AUTO_DISABLED_REASON) or `switched-off` (by support or an admin) when off. */
  disabledReason: typeof AUTO_DISABLED_REASON | typeof SWITCHED_OFF_REASON | null;
  /**
   * When the auto-disable rule switches the target off if every attempt keeps failing: its first
   * failed attempt at or after this time does (shouldAutoDisable). Null when the rule cannot: the
   * target is off, has no run of failures, or the rule is off (`afterMs` 0).
   */
  autoDisableAt: Date | null;
  /** Every attempt has failed for AUTO_DISABLE_WARNING_AFTER_MS or more and autoDisableAt is set: warn the owner. */
  warning: boolean;
}

/** A target's outlook (TargetOutlook) from its stored state, the auto-disable rule's `afterMs` and the time `now`. */
export function targetOutlook(
  target: { enabled: boolean; disabledReason: string | null; failingSince: Date | null },
  afterMs: number,
  now: Date,
): TargetOutlook {
  const disabledReason = target.enabled ? null : target.disabledReason === AUTO_DISABLED_REASON ? AUTO_DISABLED_REASON : SWITCHED_OFF_REASON;
  if (!target.enabled || target.failingSince === null || afterMs <= 0) return { disabledReason, autoDisableAt: null, warning: false };
  const autoDisableAt = new Date(target.failingSince.getTime() + afterMs);
  return { disabledReason, autoDisableAt, warning: now.getTime() - target.failingSince.getTime() >= AUTO_DISABLE_WARNING_AFTER_MS };
}
