import { deliveryBackoffStrategy, exponentialBackoffMs } from '../src';

const POLICY = { backoffDelayMs: 30_000, backoffJitter: 0, retryAfterMaxMs: 3_600_000 };

describe('the delivery backoff', () => {
  it('doubles the wait from DELIVERY_BACKOFF_MS with each retry, as BullMQ’s exponential type does', () => {
    expect([1, 2, 3, 4].map((n) => exponentialBackoffMs(n, POLICY))).toEqual([30_000, 60_000, 120_000, 240_000]);
  });

  it('draws each wait between (1 - jitter) and 1 times its nominal value', () => {
    const policy = { ...POLICY, backoffJitter: 0.2 };
    expect(exponentialBackoffMs(2, policy, () => 0)).toBe(48_000);
    expect(exponentialBackoffMs(2, policy, () => 0.999999)).toBe(59_999);
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
