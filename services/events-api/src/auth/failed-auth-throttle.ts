import type { Request } from 'express';
import type { AuthFailuresConfig } from '@herald/config';
import { addressKey } from '../http/client-address';
import { HttpError } from '../http/http-error';

/**
 * Slows down guessing: counts failed authentications per client address, and refuses every
 * authentication from an address that failed too often (429 with Retry-After) until its window
 * ends. One table per process for the guessable credentials (bearer tokens, dashboard login), so
 * switching between them gives no fresh budget. API keys (256 random bits) are not counted: see
 * events/router.ts.
 */
export interface FailedAuthThrottle {
  /** Throws a 429 HttpError when the request's client address has used up its failures. */
  check(req: Request): void;
  /** Counts one failed authentication of the request's client address. */
  failed(req: Request): void;
  /** How many addresses are remembered now (at most `maxAddresses`). */
  size(): number;
}

export interface FailedAuthThrottleOptions extends AuthFailuresConfig {
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
    check(req) {
      // Nothing failed lately (the usual case): no address to work out on the hot path.
      if (windows.size === 0) return;
      const at = now();
      const window = windows.get(clientKey(req));
      if (!window || window.endsAt <= at || window.failures < options.perAddress) return;
      throw new HttpError(
        429,
        'too_many_failed_authentications',
        'Too Many Requests',
        `More than ${options.perAddress} failed authentications from this address in ${options.windowSeconds} s; wait before trying again.`,
        {},
        { 'Retry-After': String(Math.max(1, Math.ceil((window.endsAt - at) / 1000))) },
      );
    },
    failed(req) {
      const at = now();
      dropExpired(at);
      const address = clientKey(req);
      const window = windows.get(address);
      if (window && window.endsAt > at) {
        window.failures += 1;
        return;
      }
      windows.delete(address);
      windows.set(address, { failures: 1, endsAt: at + windowMs });
      while (windows.size > options.maxAddresses) windows.delete(windows.keys().next().value!);
    },
    size: () => windows.size,
  };
}

/**
 * Whose failures a request counts as (see addressKey). `req.ip` follows Express's `trust proxy`
 * setting, which the app leaves off: the TCP peer.
 */
export function clientKey(req: Request): string {
  return addressKey(req.ip ?? req.socket.remoteAddress);
}
