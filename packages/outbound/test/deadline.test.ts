import { Deadline } from '../src/deadline';

describe('Deadline', () => {
  it('calls each listener once when its time passes, and reports it expired', async () => {
    const deadline = new Deadline(20);
    const calls: string[] = [];
    deadline.onExpiry(() => calls.push('a'));
    deadline.onExpiry(() => calls.push('b'));
    expect(deadline.expired).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(deadline.expired).toBe(true);
    expect(calls).toEqual(['a', 'b']);
    deadline.clear();
  });

  it('calls a listener added after expiry at once', async () => {
    const deadline = new Deadline(1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    let called = 0;
    deadline.onExpiry(() => (called += 1));
    expect(called).toBe(1);
  });

  it('calls no listener that stopped waiting, nor any once cleared', async () => {
    const stopped = new Deadline(20);
    const cleared = new Deadline(20);
    const calls: string[] = [];
    const stop = stopped.onExpiry(() => calls.push('stopped'));
    stopped.onExpiry(() => calls.push('kept'));
    cleared.onExpiry(() => calls.push('cleared'));
    stop();
    cleared.clear();
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(calls).toEqual(['kept']);
    expect(cleared.expired).toBe(false);
  });

  it('aborts the AbortSignal it gives when its time passes', async () => {
    const deadline = new Deadline(20);
    const signal = deadline.signal();
    expect(signal.aborted).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(signal.aborted).toBe(true);
  });
});
