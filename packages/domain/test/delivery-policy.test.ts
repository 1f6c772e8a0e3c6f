import { effectiveDeliveryPolicy, resolveDeliveryPolicy, storedDeliveryPolicy } from '../src';

const DEFAULTS = { attempts: 22, maxBackoffMs: 21_600_000, timeoutMs: 10_000, maxInFlight: 16 };

describe("a target's delivery policy", () => {
  it("resolves each field to the target's own value, or the global default (no rate limit: 0)", () => {
    expect(resolveDeliveryPolicy({ attempts: 3, maxRatePerSecond: 0.5 }, DEFAULTS)).toEqual({
      attempts: 3,
      maxBackoffMs: 21_600_000,
      timeoutMs: 10_000,
      maxInFlight: 16,
      maxRatePerSecond: 0.5,
    });
    expect(resolveDeliveryPolicy({}, DEFAULTS).maxRatePerSecond).toBe(0);
  });

  it('says where each value in force comes from, a rate no one set being null', () => {
    expect(effectiveDeliveryPolicy({ timeoutMs: 300 }, DEFAULTS)).toEqual({
      attempts: { value: 22, source: 'default' },
      maxBackoffMs: { value: 21_600_000, source: 'default' },
      timeoutMs: { value: 300, source: 'target' },
      maxInFlight: { value: 16, source: 'default' },
      maxRatePerSecond: { value: null, source: 'default' },
    });
  });

  it('reads back from storage only the known fields in range, leaving anything else to the default', () => {
    expect(storedDeliveryPolicy(null)).toEqual({});
    expect(storedDeliveryPolicy('x')).toEqual({});
    expect(storedDeliveryPolicy({ attempts: 5, maxBackoffMs: 10, timeoutMs: 2.5, maxInFlight: '4', maxRatePerSecond: 2.5, retries: 3 })).toEqual({
      attempts: 5,
      maxRatePerSecond: 2.5,
    });
  });
});
