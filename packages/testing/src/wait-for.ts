/**
 * Polls `read` until `done` holds for its value, and returns that value; fails naming `what` once
 * `timeoutMs` has passed. The one way tests, faults and benches wait for something to happen.
 */
export async function waitFor<T>(read: () => T | Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000, what = 'the condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
  }
}

// Short enough that a test waits barely longer than the thing takes, long enough not to busy-loop.
const POLL_INTERVAL_MS = 25;
