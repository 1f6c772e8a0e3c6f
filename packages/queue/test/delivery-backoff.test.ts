import { deliveryBackoffStrategy, exponentialBackoffMs } from '../src';

const POLICY = { backoffDelayMs: 30_000, backoffMaxMs: 21_600_000, backoffJitter: 0, retryAfterMaxMs: 3_600_000 };

describe('the delivery backoff', () => {
  it('doubles the wait from DELIVERY_BACKOFF_MS with each retry, as BullMQ’s exponential type does', () => {
    expect([1, 2, 3, 4].map((n) => exponentialBackoffMs(n, POLICY))).toEqual([30_000, 60_000, 120_000, 240_000]);
  });

  it('stops doubling at DELIVERY_BACKOFF_MAX_MS: the default schedule spans about three days over 22 tries', () => {
    const waits = Array.from({ length: 21 }, (_, i) => exponentialBackoffMs(i + 1, POLICY));
    expect(waits.slice(8, 12)).toEqual([7_680_000, 15_360_000, 21_600_000, 21_600_000]);
    expect(waits.every((wait) => wait <= 21_600_000)).toBe(true);
    // 30 s doubling to 4 h 16 min (8 h 31 min 30 s in all), then 6 h eleven times: 74 h 31 min 30 s.
    expect(waits.reduce((sum, wait) => sum + wait, 0)).toBe(((74 * 60 + 31) * 60 + 30) * 1_000);
  });

  it('draws each wait between (1 - jitter) and 1 times its nominal value', () => {
    const policy = { ...POLICY, backoffJitter: 0.2 };
    expect(exponentialBackoffMs(2, policy, () => 0)).toBe(48_000);
    expect(exponentialBackoffMs(2, policy, () => 0.999999)).toBe(59_999);
  });

  it("holds the wait at the longest wait of the failed attempt's target policy, when it carries one", () => {
    const strategy = deliveryBackoffStrategy(POLICY);
    const failure = Object.assign(new Error('500'), { backoffMaxMs: 45_000 });
    expect([1, 2, 3, 10].map((n) => strategy(n, 'herald-delivery', failure))).toEqual([30_000, 45_000, 45_000, 45_000]);
    // A longer policy than the settings' lets the doubling go on.
    expect(strategy(12, 'herald-delivery', Object.assign(new Error('500'), { backoffMaxMs: 86_400_000 }))).toBe(61_440_000);
  });

  it('waits as long as a Retry-After asks when that is longer than the exponential wait', () => {
    const strategy = deliveryBackoffStrategy(POLICY);
    expect(strategy(1, 'herald-delivery', Object.assign(new Error('429'), { retryAfterMs: 90_000 }))).toBe(90_000);
  });

  it('never waits less than the exponential wait, whatever Retry-After says', () => {
    const strategy = deliveryBackoffStrategy(POLICY);
    expect(strategy(3, 'herald-delivery', Object.assign(new Error('503'), { retryAfterMs: 0 }))).toBe(120_000);
  });

  it('cuts a Retry-After to RETRY_AFTER_MAX_MS', () => {
    const strategy = deliveryBackoffStrategy({ ...POLICY, retryAfterMaxMs: 600_000 });
    expect(strategy(1, 'herald-delivery', Object.assign(new Error('429'), { retryAfterMs: 86_400_000 }))).toBe(600_000);
  });

  it('uses the exponential wait for a failure without Retry-After', () => {
    expect(deliveryBackoffStrategy(POLICY)(2, 'herald-delivery', new Error('500'))).toBe(60_000);
  });
});
