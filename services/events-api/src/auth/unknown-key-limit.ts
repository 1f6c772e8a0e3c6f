import { apiKeyPrefixOf, type ApiKeyRepository } from '@herald/db';
import { HttpError } from '../http/http-error';
import type { KnownKeyPrefixes } from './known-key-prefixes';

export interface UnknownKeyLimitOptions {
  /**
   * UNKNOWN_API_KEYS_PER_SECOND: lookups of keys whose prefix no key in use has (made up, or made
   * by another process since the last reload of the prefixes) allowed per second in this process.
   */
  perSecond: number;
  /** UNKNOWN_API_KEYS_PER_ADDRESS: of those, how many one client address may cause per second. */
  perAddress: number;
  /** UNKNOWN_API_KEYS_PER_PREFIX: lookups per second that find no key, per prefix of a key in use. */
  perPrefix: number;
  /** The prefixes of the keys in use. */
  prefixes: KnownKeyPrefixes;
  /** The clock, in milliseconds (tests pass their own). Default `Date.now`. */
  now?: () => number;
}

/** An API key lookup, with whom the request came from (clientKey: its address, an IPv6 /64). */
export interface SourcedKeyLookup {
  authenticate(key: string, source: string): ReturnType<ApiKeyRepository['authenticate']>;
}

/**
 * The database lookup of API keys, limited so that made-up keys cost nothing and no one can spend
 * another's budget. A key whose prefix a key in use has is looked up; lookups of one prefix that
 * find no key are limited per second (`perPrefix`), so guessing within a known prefix is slowed
 * for that prefix alone. A key whose prefix no key in use has is almost surely made up: it is looked
 * up only within `perAddress` per source and `perSecond` in all (so a key made by another process
 * since the last reload still works), and refused with 429 (Retry-After: 1) past them. A flood of
 * made-up keys from any number of addresses thus never delays a key in use.
 */
export function limitUnknownKeyLookups(apiKeys: Pick<ApiKeyRepository, 'authenticate'>, options: UnknownKeyLimitOptions): SourcedKeyLookup {
  const now = options.now ?? Date.now;
  // Counts of the current second, all reset when it ends: a few entries per request at most.
  let second = -1;
  let unknownPrefixLookups = 0;
  const bySource = new Map<string, number>();
  const missesByPrefix = new Map<string, number>();
  const startSecond = (): void => {
    const at = Math.floor(now() / 1000);
    if (at === second) return;
    second = at;
    unknownPrefixLookups = 0;
    bySource.clear();
    missesByPrefix.clear();
  };
  const refuse = (detail: string): never => {
    throw new HttpError(429, 'too_many_unknown_keys', 'Too Many Requests', detail, { header: 'x-api-key' }, { 'Retry-After': '1' });
  };

  return {
    async authenticate(key, source) {
      startSecond();
      const prefix = apiKeyPrefixOf(key);
      if (options.prefixes.has(prefix)) {
        if ((missesByPrefix.get(prefix) ?? 0) >= options.perPrefix)
          refuse('Too many unknown API keys with this prefix were tried in the last second; retry shortly.');
        const answer = await apiKeys.authenticate(key);
        if (answer === null) {
          startSecond();
          missesByPrefix.set(prefix, (missesByPrefix.get(prefix) ?? 0) + 1);
        }
        return answer;
      }
      const fromSource = bySource.get(source) ?? 0;
      if (fromSource >= options.perAddress || unknownPrefixLookups >= options.perSecond) {
        refuse('Too many unknown API keys were tried in the last second; retry shortly.');
      }
      bySource.set(source, fromSource + 1);
      unknownPrefixLookups += 1;
      const answer = await apiKeys.authenticate(key);
      if (answer !== null) options.prefixes.add(prefix);
      return answer;
    },
  };
}
