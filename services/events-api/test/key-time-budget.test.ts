import { HttpError } from '../src/http/http-error';
import { createKeyTimeBudget } from '../src/http/key-time-budget';

describe('createKeyTimeBudget', () => {
  let clock: number;
  /** Work that takes `ms` of the test's clock. */
  const takes = (ms: number) => async () => {
    clock += ms;
    return ms;
  };
  beforeEach(() => {
    clock = 0;
  });

  it('lets a key run until its reads have taken its saved-up time, then refuses with a 429 and Retry-After until it refills', async () => {
    const budget = createKeyTimeBudget({ msPerSecond: 500, burstMs: 2_000, waitMs: 0, now: () => clock });
    await budget.check('k');
    await budget.spend('k', takes(1_500));
    await budget.check('k');
    // One read may overdraw: 2,000 - 1,500, then + 500 x 1.8 s of refill - 1,800 = -400.
    await budget.spend('k', takes(1_800));
    const refused = await budget.check('k').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(HttpError);
    expect(refused).toMatchObject({ status: 429, code: 'query_time_exceeded', headers: { 'Retry-After': '1' } });
    // Other keys have budgets of their own.
    await expect(budget.check('other')).resolves.toBeUndefined();
    clock += 700;
    await expect(budget.check('k')).rejects.toThrow(HttpError);
    clock += 200;
    await expect(budget.check('k')).resolves.toBeUndefined();
  });

  it('holds a read over the budget until it refills when that takes at most waitMs, and holds a refusal for waitMs', async () => {
    const budget = createKeyTimeBudget({ msPerSecond: 1_000, burstMs: 100, waitMs: 200, now: () => clock });
    await budget.spend('k', takes(150));
    // 50 ms short: refilled in 50 ms of waiting.
    let started = performance.now();
    await budget.check('k');
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    await budget.spend('k', takes(500));
    // Now 450 ms short: more than waitMs, refused once waitMs has passed.
    started = performance.now();
    await expect(budget.check('k')).rejects.toMatchObject({ status: 429, code: 'query_time_exceeded' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(195);
  });

  it('takes the time of a read that fails too', async () => {
    const budget = createKeyTimeBudget({ msPerSecond: 100, burstMs: 1_000, waitMs: 0, now: () => clock });
    await expect(
      budget.spend('k', async () => {
        clock += 1_500;
        throw new Error('statement timeout');
      }),
    ).rejects.toThrow('statement timeout');
    await expect(budget.check('k')).rejects.toThrow(HttpError);
  });

  it('is off at 0 ms per second', async () => {
    const budget = createKeyTimeBudget({ msPerSecond: 0, burstMs: 1_000, waitMs: 0, now: () => clock });
    await budget.spend('k', takes(10_000));
    await expect(budget.check('k')).resolves.toBeUndefined();
  });
});
