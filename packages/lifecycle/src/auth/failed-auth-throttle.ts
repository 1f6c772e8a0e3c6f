import type { PlainResponse } from '../ops/plain-http';
import { problemResponse, problemType } from '../ops/problem';
import { addressKey } from './client-address';

/**
 * Slows down guessing: counts failed authentications per client address, and refuses every
 * authentication from an address that failed too often (429 with Retry-After) until its window
 * ends. One table per process for the guessable credentials it checks (the events-api's admin and
 * ingest tokens and dashboard login, and METRICS_TOKEN on every process that serves /metrics), so
 * switching between them gives no fresh budget. The events-api does not count API keys (256
 * random bits): see its events/router.ts.
 *
 * Addresses are given as the TCP peer reports them (`socket.remoteAddress`); each is counted by
 * its addressKey (IPv4, or an IPv6 /64).
 */
export interface FailedAuthThrottle {
  /** The 429 problem+json answer (with Retry-After) when `address` has used up its failures; undefined otherwise. */
  refusal(address: string | undefined): PlainResponse | undefined;
  /** Counts one failed authentication of `address`. */
  failed(address: string | undefined): void;
  /** How many addresses are remembered now (at most `maxAddresses`). */
  size(): number;
}

/** AUTH_FAILURES_PER_ADDRESS, AUTH_FAILURE_WINDOW_SECONDS and AUTH_FAILURE_MAX_ADDRESSES (`AuthFailuresConfig`), and a clock. */
export interface FailedAuthThrottleOptions {
  /** Failed authentications one address may make in a window; past it, every authentication from it is refused until the window ends. */
  perAddress: number;
  /** The window, from an address's first failure, in seconds. */
  windowSeconds: number;
  /** Most addresses remembered at once (a hard memory bound); past it the oldest window is forgotten. */
  maxAddresses: number;
  /** The clock, in milliseconds (tests pass their own). Default `Date.now`. */
  now?: () => number;
}

/**
 * In memory, per process: an attacker spread over several processes gets each one's budget, which
 * still turns thousands of guesses a second into a few a minute. The table holds at most
 * `maxAddresses` entries, the oldest window dropped first (and expired ones as soon as they reach
 * the front), so spoofed or rotating addresses cost a bounded amount of memory.
 */
export function createFailedAuthThrottle(options: FailedAuthThrottleOptions): FailedAuthThrottle {
  const now = options.now ?? Date.now;
  const windowMs = options.windowSeconds * 1000;
  // In order of window start, since an entry is re-inserted when its window starts again.
  const windows = new Map<string, { failures: number; endsAt: number }>();

  const dropExpired = (at: number): void => {
    for (const [address, window] of windows) {
      if (window.endsAt > at) return;
      windows.delete(address);
    }
  };

  return {
    refusal(address) {
      // Nothing failed lately (the usual case): no address to work out on the hot path.
      if (windows.size === 0) return undefined;
      const at = now();
      const window = windows.get(addressKey(address));
      if (!window || window.endsAt <= at || window.failures < options.perAddress) return undefined;
      return problemResponse(
        {
          type: problemType('too_many_failed_authentications'),
          title: 'Too Many Requests',
          status: 429,
          detail: `More than ${options.perAddress} failed authentications from this address in ${options.windowSeconds} s; wait before trying again.`,
        },
        { 'Retry-After': String(Math.max(1, Math.ceil((window.endsAt - at) / 1000))) },
      );
    },
    failed(address) {
      const at = now();
      dropExpired(at);
      const key = addressKey(address);
      const window = windows.get(key);
      if (window && window.endsAt > at) {
        window.failures += 1;
        return;
      }
      windows.delete(key);
      windows.set(key, { failures: 1, endsAt: at + windowMs });
      while (windows.size > options.maxAddresses) windows.delete(windows.keys().next().value!);
    },
    size: () => windows.size,
  };
}
