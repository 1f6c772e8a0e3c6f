import { startOutboxTask } from '../src/outbox-task';

const logger = { warn: () => undefined };

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

describe('an outbox task', () => {
  it('waits one interval before its first periodic pass and hands each result to afterPass', async () => {
    const pass = jest.fn(async () => 7);
    const afterPass = jest.fn(() => ({ full: false }));
    const task = startOutboxTask(pass, { name: 'test', schedule: { intervalMs: 1_000, batchSize: 10 }, logger, afterPass });
    await jest.advanceTimersByTimeAsync(999);
    expect(pass).toHaveBeenCalledTimes(0);
    await jest.advanceTimersByTimeAsync(1);
    expect(pass).toHaveBeenCalledTimes(1);
    expect(afterPass).toHaveBeenCalledWith(7);
    await task.stop();
  });

  it('runs a caller’s own pass at once, returns its result and leaves afterPass to the loop', async () => {
    const pass = jest.fn(async () => 3);
    const afterPass = jest.fn(() => ({ full: false }));
    const task = startOutboxTask(pass, { name: 'test', schedule: { intervalMs: 60_000, batchSize: 10 }, logger, afterPass });
    expect(await task.runOnce()).toBe(3);
    expect(afterPass).not.toHaveBeenCalled();
    await task.stop();
  });

  it('throws what a caller’s own pass threw', async () => {
    const task = startOutboxTask(async () => Promise.reject(new Error('down')), {
      name: 'test',
      schedule: { intervalMs: 60_000, batchSize: 10 },
      logger,
      afterPass: () => ({ full: false }),
    });
    await expect(task.runOnce()).rejects.toThrow('down');
    await task.stop();
  });
});
