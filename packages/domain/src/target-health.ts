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
