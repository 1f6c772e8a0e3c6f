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
export const LAST_SUCCESS_PRECISION_MS = 60_000;

/** A target's health as stored when its attempt was loaded. */
export interface TargetHealthSeen {
  /** Start of the current run of failed attempts; null when the last attempt succeeded. */
  failingSince: Date | null;
  lastSuccessAt: Date | null;
}

/**
 * Whether an attempt changes its target's stored health, judged from the health seen when the
 * attempt was loaded: a 200 ends a run of failures or refreshes a last success older than
 * LAST_SUCCESS_PRECISION_MS; a failure starts a run unless one is going; an auto-disable always
 * writes. In the steady state (a target that keeps answering, or keeps failing) nothing changes,
 * and the worker skips the health write. What another worker wrote since the load is caught up by
 * the next attempt that sees it.
 */
export function attemptChangesTargetHealth(seen: TargetHealthSeen, attempt: { succeeded: boolean; startedAt: Date; disableTarget: boolean }): boolean {
  if (attempt.disableTarget) return true;
  if (!attempt.succeeded) return seen.failingSince === null;
  return seen.failingSince !== null || seen.lastSuccessAt === null || seen.lastSuccessAt.getTime() < attempt.startedAt.getTime() - LAST_SUCCESS_PRECISION_MS;
}
