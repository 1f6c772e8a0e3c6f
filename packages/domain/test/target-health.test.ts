import { shouldAutoDisable } from '../src';

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
