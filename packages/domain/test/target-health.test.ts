import { attemptChangesTargetHealth, shouldAutoDisable } from '../src';

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
