import { Deadline } from '../src/outbound-client';

// The deadline's clock is Jest's: time passes when a test advances it, never by waiting.
beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

describe('Deadline', () => {
  it('calls each listener once when its time passes, and reports it expired', () => {
    const deadline = new Deadline(20);
    const calls: string[] = [];
    deadline.onExpiry(() => calls.push('a'));
    deadline.onExpiry(() => calls.push('b'));
    jest.advanceTimersByTime(19);
    expect(deadline.expired).toBe(false);
    expect(calls).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(deadline.expired).toBe(true);
    expect(calls).toEqual(['a', 'b']);
    jest.advanceTimersByTime(100);
    expect(calls).toEqual(['a', 'b']);
    deadline.clear();
  });

  it('calls a listener added after expiry at once', () => {
    const deadline = new Deadline(1);
    jest.advanceTimersByTime(1);
    let called = 0;
    deadline.onExpiry(() => (called += 1));
    expect(called).toBe(1);
  });

  it('calls no listener that stopped waiting, nor any once cleared', () => {
    const stopped = new Deadline(20);
    const cleared = new Deadline(20);
    const calls: string[] = [];
    const stop = stopped.onExpiry(() => calls.push('stopped'));
    stopped.onExpiry(() => calls.push('kept'));
    cleared.onExpiry(() => calls.push('cleared'));
    stop();
    cleared.clear();
    jest.advanceTimersByTime(60);
    expect(calls).toEqual(['kept']);
    expect(cleared.expired).toBe(false);
  });

  it('aborts the AbortSignal it gives when its time passes', () => {
    const deadline = new Deadline(20);
    const signal = deadline.signal();
    jest.advanceTimersByTime(19);
    expect(signal.aborted).toBe(false);
    jest.advanceTimersByTime(1);
    expect(signal.aborted).toBe(true);
  });
});
