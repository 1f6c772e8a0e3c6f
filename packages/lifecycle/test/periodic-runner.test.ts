import { startPeriodicRunner, type PassResult } from '../src';

/** A logger that keeps its warnings. */
function recordingLogger() {
  const warnings: Array<{ message: string; meta: unknown }> = [];
  return { warnings, warn: (message: string, meta?: unknown) => void warnings.push({ message, meta }) };
}

const notFull: PassResult = { full: false };

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

describe('the periodic runner (the sweeper, the reconciler, partition maintenance)', () => {
  it('runs a pass after the first delay, then one per interval', async () => {
    const pass = jest.fn(async () => notFull);
    const runner = startPeriodicRunner(pass, { name: 'test', intervalMs: 1_000, firstPassAfterMs: 500, logger: recordingLogger() });
    await jest.advanceTimersByTimeAsync(499);
    expect(pass).toHaveBeenCalledTimes(0);
    await jest.advanceTimersByTimeAsync(1);
    expect(pass).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(2_000);
    expect(pass).toHaveBeenCalledTimes(3);
    await runner.stop();
  });

  it('starts at once by default', async () => {
    const pass = jest.fn(async () => notFull);
    const runner = startPeriodicRunner(pass, { name: 'test', intervalMs: 60_000, logger: recordingLogger() });
    await jest.advanceTimersByTimeAsync(0);
    expect(pass).toHaveBeenCalledTimes(1);
    await runner.stop();
  });

  it('runs the next pass at once after a full one, and waits an interval after one that was not full', async () => {
    const results = [true, true, true, false];
    const pass = jest.fn(async () => ({ full: results.shift() ?? false }));
    const runner = startPeriodicRunner(pass, { name: 'test', intervalMs: 60_000, logger: recordingLogger() });
    // Node runs a 0 ms timer after 1 ms.
    await jest.advanceTimersByTimeAsync(10);
    expect(pass).toHaveBeenCalledTimes(4);
    await jest.advanceTimersByTimeAsync(30_000);
    expect(pass).toHaveBeenCalledTimes(4);
    await jest.advanceTimersByTimeAsync(30_000);
    expect(pass).toHaveBeenCalledTimes(5);
    await runner.stop();
  });

  it('logs and counts a failed pass instead of throwing, and tries again after the interval', async () => {
    const logger = recordingLogger();
    const pass = jest
      .fn<Promise<PassResult>, []>()
      .mockRejectedValueOnce(new Error('Redis is not connected'))
      .mockRejectedValueOnce('not an Error')
      .mockResolvedValue(notFull);
    const runner = startPeriodicRunner(pass, { name: 'sweep', intervalMs: 1_000, logger });
    await jest.advanceTimersByTimeAsync(0);
    expect(runner.failedPasses).toBe(1);
    expect(logger.warnings).toEqual([{ message: 'sweep failed; trying again next interval', meta: { error: 'Redis is not connected' } }]);
    await jest.advanceTimersByTimeAsync(999);
    expect(pass).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(runner.failedPasses).toBe(2);
    expect(logger.warnings[1]).toMatchObject({ meta: { error: 'not an Error' } });
    await jest.advanceTimersByTimeAsync(1_000);
    expect(pass).toHaveBeenCalledTimes(3);
    expect(runner.failedPasses).toBe(2);
    await runner.stop();
  });

  it('stop() waits for the pass in flight, and no pass runs after it', async () => {
    let finish!: () => void;
    let finished = false;
    const pass = jest.fn(
      () =>
        new Promise<PassResult>((resolve) => {
          finish = () => {
            finished = true;
            resolve({ full: true });
          };
        }),
    );
    const runner = startPeriodicRunner(pass, { name: 'test', intervalMs: 1_000, logger: recordingLogger() });
    await jest.advanceTimersByTimeAsync(0);
    expect(pass).toHaveBeenCalledTimes(1);

    let stopped = false;
    const stopping = runner.stop().then(() => (stopped = true));
    await jest.advanceTimersByTimeAsync(5_000);
    expect(stopped).toBe(false);
    finish();
    await stopping;
    expect(finished).toBe(true);
    // The pass was full, yet nothing follows it once stopped.
    await jest.advanceTimersByTimeAsync(5_000);
    expect(pass).toHaveBeenCalledTimes(1);
  });

  it('stop() before the first pass means no pass at all', async () => {
    const pass = jest.fn(async () => notFull);
    const runner = startPeriodicRunner(pass, { name: 'test', intervalMs: 1_000, firstPassAfterMs: 1_000, logger: recordingLogger() });
    await runner.stop();
    await jest.advanceTimersByTimeAsync(10_000);
    expect(pass).not.toHaveBeenCalled();
  });
});
