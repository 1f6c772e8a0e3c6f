/** A target's switch-off state as stored: why and since when it is off, and its run of failures. */
export interface TargetSwitchState {
  disabledReason: string | null;
  disabledAt: Date | null;
  /** Start of the current run of failed attempts (target-health.ts); null when none. */
  failingSince: Date | null;
}

/**
 * What a PUT or PATCH (or a create, `current` null) does to a target's switch-off state, from its
 * new `enabled`: switching it on clears the reason and the time, and a target switched on again
 * after being off starts with no run of failures (its merchant fixed it; the next failure starts a
 * new run). Switching it off by hand keeps the reason and time of an earlier switch-off, and is
 * timed `now` otherwise; an admin's switch-off has no reason.
 */
export function targetSwitchState(current: (TargetSwitchState & { enabled: boolean }) | null, enabled: boolean, now: Date): TargetSwitchState {
  if (current === null) return { disabledReason: null, disabledAt: enabled ? null : now, failingSince: null };
  if (enabled) return { disabledReason: null, disabledAt: null, failingSince: current.enabled ? current.failingSince : null };
  return {
    disabledReason: current.enabled ? null : current.disabledReason,
    disabledAt: current.disabledAt ?? now,
    failingSince: current.failingSince,
  };
}
