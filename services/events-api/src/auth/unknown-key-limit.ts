import type { ApiKeyRepository } from '@herald/db';
import { HttpError } from '../http/http-error';

export interface UnknownKeyLimitOptions {
  /** UNKNOWN_API_KEYS_PER_SECOND: lookups that found no key allowed per second, in this process. */
  perSecond: number;
  /** The clock, in milliseconds (tests pass their own). Default `Date.now`. */
  now?: () => number;
}

/**
 * The database lookup of API keys, limited for everyone at once: per-address limits cannot stop a
 * flood of made-up keys from many addresses, and each such key costs a query. Counts the lookups
 * that found no key in each second; once `perSecond` have, further lookups are refused with 429
 * (Retry-After: 1) until the second ends. Known keys never count, and the cache in front of this
 * keeps answering keys it holds. Lookups already running when the limit is reached still finish.
 */
export function limitUnknownKeyLookups(
  apiKeys: Pick<ApiKeyRepository, 'authenticate'>,
  options: UnknownKeyLimitOptions,
): Pick<ApiKeyRepository, 'authenticate'> {
  const now = options.now ?? Date.now;
  let second = -1;
  let unknown = 0;
  const currentSecond = (): number => {
    const at = Math.floor(now() / 1000);
    if (at !== second) {
      second = at;
      unknown = 0;
    }
    return at;
  };
  return {
    async authenticate(key) {
      currentSecond();
      if (unknown >= options.perSecond) {
        throw new HttpError(
          429,
          'too_many_unknown_keys',
          'Too Many Requests',
          'Too many unknown API keys were tried in the last second; retry shortly.',
          { header: 'x-api-key' },
          { 'Retry-After': '1' },
        );
      }
      const answer = await apiKeys.authenticate(key);
      if (answer === null) {
        currentSecond();
        unknown += 1;
      }
      return answer;
    },
  };
}
