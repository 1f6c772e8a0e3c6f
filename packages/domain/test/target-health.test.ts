import { attemptChangesTargetHealth, AUTO_DISABLE_WARNING_AFTER_MS, AUTO_DISABLED_REASON, shouldAutoDisable, targetHealthAfter, targetOutlook } from '../src';

const DAY = 86_400_000;
const now = new Date('2026-11-24T12:00:00Z');
const ago = (ms: number) => new Date(now.getTime() - ms);

describe('shouldAutoDisable', () => {
  it('switches a target off once every attempt has failed for the whole threshold', () => {
    expect(shouldAutoDisable(ago(5 * DAY), now, 5 * DAY)).toBe(true);
    expect(shouldAutoDisable(ago(6 * DAY), now, 5 * DAY)).toBe(true);
  });

  it('keeps a target whose run of failures is shorter than the threshold', () => {
    expect(shouldAutoDisable(ago(5 * DAY - 1), now, 5 * DAY)).toBe(false);
  });

  it('keeps a target with no run of failures yet: this failure starts one', () => {
    expect(shouldAutoDisable(null, now, 5 * DAY)).toBe(false);
  });

  it('never switches a target off when the threshold is 0', () => {
    expect(shouldAutoDisable(ago(365 * DAY), now, 0)).toBe(false);
  });
});

describe('attemptChangesTargetHealth', () => {
  const MINUTE = 60_000;
  it('always writes an auto-disable', () => {
    expect(attemptChangesTargetHealth({ failingSince: ago(DAY), lastSuccessAt: null }, { succeeded: false, startedAt: now, disableTarget: true })).toBe(true);
  });

  it('refreshes a last success exactly older than the precision, not one at it', () => {
    const at = (ms: number) =>
      attemptChangesTargetHealth({ failingSince: null, lastSuccessAt: ago(ms) }, { succeeded: true, startedAt: now, disableTarget: false });
    expect(at(MINUTE)).toBe(false);
    expect(at(MINUTE + 1)).toBe(true);
  });
});

describe('targetHealthAfter', () => {
  const MINUTE = 60_000;
  const healthy = { enabled: true, disabledReason: null, disabledAt: null, failingSince: null, lastSuccessAt: ago(MINUTE) };
  const failing = { ...healthy, failingSince: ago(DAY), lastSuccessAt: ago(2 * DAY) };
  const ok = (startedAt: Date) => ({ succeeded: true, startedAt, disableTarget: false });
  const failed = (startedAt: Date, disableTarget = false) => ({ succeeded: false, startedAt, disableTarget });

  it('changes nothing in the steady state: a target that keeps answering, or keeps failing', () => {
    expect(targetHealthAfter(healthy, [ok(now)], now)).toBeNull();
    expect(targetHealthAfter(failing, [failed(now), failed(ago(1))], now)).toBeNull();
  });

  it('ends a run of failures with a 200, moving the last success forward but never back', () => {
    expect(targetHealthAfter(failing, [failed(ago(2)), ok(ago(5)), ok(ago(1))], now)).toEqual({
      autoDisabled: false,
      next: { ...failing, failingSince: null, lastSuccessAt: ago(1) },
    });
    const later = { ...failing, lastSuccessAt: now };
    expect(targetHealthAfter(later, [ok(ago(5))], now)!.next.lastSuccessAt).toEqual(now);
  });

  it("starts a run of failures at the batch's first failure, and keeps one going", () => {
    expect(targetHealthAfter(healthy, [failed(ago(1)), failed(ago(3))], now)).toEqual({ autoDisabled: false, next: { ...healthy, failingSince: ago(3) } });
  });

  it('switches off, at now, an enabled target still failing when a failure says so, unless a 200 of the batch says it answers', () => {
    expect(targetHealthAfter(failing, [failed(ago(1), true)], now)).toEqual({
      autoDisabled: true,
      next: { ...failing, enabled: false, disabledReason: AUTO_DISABLED_REASON, disabledAt: now },
    });
    expect(targetHealthAfter(failing, [failed(ago(1), true), ok(ago(2))], now)!.autoDisabled).toBe(false);
  });

  it('does not switch off a target an admin switched off, or one whose run of failures a 200 just ended', () => {
    const off = { ...failing, enabled: false, disabledReason: null, disabledAt: ago(MINUTE) };
    expect(targetHealthAfter(off, [failed(now, true)], now)).toEqual({ autoDisabled: false, next: off });
    expect(targetHealthAfter({ ...failing, failingSince: null }, [failed(now, true)], now)).toEqual({
      autoDisabled: false,
      next: { ...failing, failingSince: now },
    });
  });
});

describe('targetOutlook', () => {
  const on = { enabled: true, disabledReason: null };

  it('says when auto-disable switches a failing target off, and warns once it has failed for a day', () => {
    expect(targetOutlook({ ...on, failingSince: ago(DAY - 1) }, 5 * DAY, now)).toEqual({
      disabledReason: null,
      autoDisableAt: new Date(ago(DAY - 1).getTime() + 5 * DAY),
      warning: false,
    });
    expect(targetOutlook({ ...on, failingSince: ago(DAY) }, 5 * DAY, now)).toEqual({ disabledReason: null, autoDisableAt: ago(DAY - 5 * DAY), warning: true });
    expect(AUTO_DISABLE_WARNING_AFTER_MS).toBe(DAY);
  });

  it('agrees with shouldAutoDisable on the moment', () => {
    const failingSince = ago(2 * DAY);
    const { autoDisableAt } = targetOutlook({ ...on, failingSince }, 3 * DAY, now);
    expect(shouldAutoDisable(failingSince, autoDisableAt!, 3 * DAY)).toBe(true);
    expect(shouldAutoDisable(failingSince, new Date(autoDisableAt!.getTime() - 1), 3 * DAY)).toBe(false);
  });

  it('names no date for a target that is not failing, is off, or whose rule is off', () => {
    expect(targetOutlook({ ...on, failingSince: null }, 5 * DAY, now)).toEqual({ disabledReason: null, autoDisableAt: null, warning: false });
    expect(targetOutlook({ ...on, failingSince: ago(2 * DAY) }, 0, now)).toEqual({ disabledReason: null, autoDisableAt: null, warning: false });
    expect(targetOutlook({ enabled: false, disabledReason: AUTO_DISABLED_REASON, failingSince: ago(6 * DAY) }, 5 * DAY, now)).toEqual({
      disabledReason: 'auto-disabled',
      autoDisableAt: null,
      warning: false,
    });
    expect(targetOutlook({ enabled: false, disabledReason: null, failingSince: null }, 5 * DAY, now).disabledReason).toBe('switched-off');
  });
});
