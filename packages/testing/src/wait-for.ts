/** What waitFor throws when its time is up: names what it waited for, and keeps the last value it read. */
export class WaitForTimeoutError<T = unknown> extends Error {
  override readonly name = 'WaitForTimeoutError';

  constructor(
    message: string,
    /** The last value read before the time was up. */
    readonly last: T,
  ) {
    super(message);
  }
}

/**
 * Polls `read` until `done` holds for its value, and returns that value; fails with a
 * WaitForTimeoutError naming `what` once `timeoutMs` has passed. The one way tests, faults and
 * benches wait for something to happen. `intervalMs` (default 25) is the pause between reads: a
 * bench whose reads cost CPU in a process it measures reads less often.
 */
export async function waitFor<T>(
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 15_000,
  what = 'the condition',
  intervalMs = POLL_INTERVAL_MS,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new WaitForTimeoutError(`timed out after ${timeoutMs} ms waiting for ${what}`, value);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * For a caller that goes on when a wait timed out (a fault scenario reports what it saw, then
 * asserts): `await waitFor(...).catch(lastRead)` resolves with the last value read. Any other error
 * is thrown again.
 */
export function lastRead<T>(error: unknown): T {
  if (error instanceof WaitForTimeoutError) return error.last as T;
  throw error;
}

// Short enough that a test waits barely longer than the thing takes, long enough not to busy-loop.
const POLL_INTERVAL_MS = 25;
