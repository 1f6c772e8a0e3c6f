import { createCoalescer } from '../src/coalescer';

/** A batch operation that records the batches it was given and answers each input doubled once released. */
function doubler() {
  const batches: number[][] = [];
  const releases: Array<() => void> = [];
  const run = (inputs: number[]): Promise<number[]> => {
    batches.push(inputs);
    return new Promise((resolve) => releases.push(() => resolve(inputs.map((n) => n * 2))));
  };
  const releaseAll = (): void => {
    for (const release of releases.splice(0)) release();
  };
  return { run, batches, releaseAll };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('createCoalescer', () => {
  it('runs the calls of one tick as one batch and answers each call with its own output', async () => {
    const op = doubler();
    const call = createCoalescer(op.run, { maxBatch: 10, maxInFlight: 1 });
    const answers = Promise.all([1, 2, 3].map(call));
    await tick();
    op.releaseAll();
    expect(await answers).toEqual([2, 4, 6]);
    expect(op.batches).toEqual([[1, 2, 3]]);
  });

  it('gathers the calls made while every slot is busy into the next batch', async () => {
    const op = doubler();
    const call = createCoalescer(op.run, { maxBatch: 10, maxInFlight: 1 });
    const first = call(1);
    await tick();
    const later = [call(2), call(3), call(4)];
    await tick();
    expect(op.batches).toEqual([[1]]);
    op.releaseAll();
    expect(await first).toBe(2);
    await tick();
    op.releaseAll();
    expect(await Promise.all(later)).toEqual([4, 6, 8]);
    expect(op.batches).toEqual([[1], [2, 3, 4]]);
  });

  it('runs up to maxInFlight batches at once, none larger than maxBatch', async () => {
    const op = doubler();
    const call = createCoalescer(op.run, { maxBatch: 2, maxInFlight: 2 });
    const answers = Promise.all([1, 2, 3, 4, 5].map(call));
    await tick();
    expect(op.batches).toEqual([
      [1, 2],
      [3, 4],
    ]);
    op.releaseAll();
    await tick();
    await tick();
    expect(op.batches).toEqual([[1, 2], [3, 4], [5]]);
    op.releaseAll();
    expect(await answers).toEqual([2, 4, 6, 8, 10]);
  });

  it('rejects every call of a failed batch, and goes on with the next', async () => {
    let fail = true;
    const call = createCoalescer(
      async (inputs: number[]) => {
        if (fail) throw new Error('database down');
        return inputs;
      },
      { maxBatch: 10, maxInFlight: 1 },
    );
    const failed = [call(1), call(2)].map((p) => p.catch((error: Error) => error.message));
    expect(await Promise.all(failed)).toEqual(['database down', 'database down']);
    fail = false;
    expect(await call(3)).toBe(3);
  });

  it('sends a lingering call with the next batch another call starts', async () => {
    const op = doubler();
    const call = createCoalescer(op.run, { maxBatch: 10, maxInFlight: 1 });
    const lingering = call(1, 60_000);
    await tick();
    await tick();
    expect(op.batches).toEqual([]);
    const immediate = call(2);
    await tick();
    expect(op.batches).toEqual([[1, 2]]);
    op.releaseAll();
    expect(await Promise.all([lingering, immediate])).toEqual([2, 4]);
  });

  it('sends a lingering call by itself once its time is up', async () => {
    const op = doubler();
    const call = createCoalescer(op.run, { maxBatch: 10, maxInFlight: 1 });
    const started = Date.now();
    const lingering = [call(1, 30), call(2, 30)];
    while (op.batches.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    expect(op.batches).toEqual([[1, 2]]);
    op.releaseAll();
    expect(await Promise.all(lingering)).toEqual([2, 4]);
  });

  it('lingers each call as long as the coalescer says at the time of the call', async () => {
    const op = doubler();
    let linger = 60_000;
    const call = createCoalescer(op.run, { maxBatch: 10, maxInFlight: 2, lingerMs: () => linger });
    const lingering = call(1);
    await tick();
    await tick();
    expect(op.batches).toEqual([]);
    // A call made when the coalescer says 0 goes at once, and carries the lingering one.
    linger = 0;
    const immediate = call(2);
    await tick();
    expect(op.batches).toEqual([[1, 2]]);
    op.releaseAll();
    expect(await Promise.all([lingering, immediate])).toEqual([2, 4]);
  });

  it('starts a batch of lingering calls as soon as it is full', async () => {
    const op = doubler();
    const call = createCoalescer(op.run, { maxBatch: 3, maxInFlight: 1, lingerMs: () => 60_000 });
    const first = [call(1), call(2)];
    await tick();
    expect(op.batches).toEqual([]);
    const third = call(3);
    await tick();
    expect(op.batches).toEqual([[1, 2, 3]]);
    op.releaseAll();
    expect(await Promise.all([...first, third])).toEqual([2, 4, 6]);
  });

  it('sends lingering calls when a running batch ends', async () => {
    const op = doubler();
    let linger = 0;
    const call = createCoalescer(op.run, { maxBatch: 10, maxInFlight: 2, lingerMs: () => linger });
    const first = call(1);
    await tick();
    expect(op.batches).toEqual([[1]]);
    linger = 60_000;
    const lingering = [call(2), call(3)];
    await tick();
    expect(op.batches).toEqual([[1]]);
    op.releaseAll();
    expect(await first).toBe(2);
    await tick();
    expect(op.batches).toEqual([[1], [2, 3]]);
    op.releaseAll();
    expect(await Promise.all(lingering)).toEqual([4, 6]);
  });

  it('refuses options below 1', () => {
    expect(() => createCoalescer(async (inputs: number[]) => inputs, { maxBatch: 0, maxInFlight: 1 })).toThrow(RangeError);
  });
});
