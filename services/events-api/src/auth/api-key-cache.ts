import type { ApiKeyRepository } from '@herald/db';

type Authentication = Awaited<ReturnType<ApiKeyRepository['authenticate']>>;

/** What GET /events asks of API keys: who a key is, with a cache in front of the database. */
export interface ApiKeyAuthenticator {
  /** The key's id and scope, or null when it is unknown or revoked (possibly as of `ttlMs` ago). */
  authenticate(key: string): Promise<Authentication>;
  /** Drops every remembered answer: called when this process revokes a key, so it is refused at once. */
  forgetAll(): void;
}

export interface ApiKeyCacheOptions {
  /** How long an answer is reused; 0 asks the database every time. */
  ttlMs: number;
  /** Most keys remembered; the oldest answer is dropped first. Default 10,000. */
  maxEntries?: number;
  /** The clock, in milliseconds (tests pass their own). Default `Date.now`. */
  now?: () => number;
}

/**
 * Remembers each key's answer (unknown keys included, so a flood of bad keys does not reach the
 * database) for `ttlMs`. Revocation through another process therefore takes effect within
 * `ttlMs` here. Answers live only in this process's memory and are never logged.
 * Lookups of one key that overlap share one query.
 */
export function createApiKeyCache(apiKeys: Pick<ApiKeyRepository, 'authenticate'>, options: ApiKeyCacheOptions): ApiKeyAuthenticator {
  const maxEntries = options.maxEntries ?? 10_000;
  const now = options.now ?? Date.now;
  const entries = new Map<string, { answer: Promise<Authentication>; expiresAt: number }>();
  return {
    authenticate(key) {
      if (options.ttlMs <= 0) return apiKeys.authenticate(key);
      const cached = entries.get(key);
      if (cached && cached.expiresAt > now()) return cached.answer;
      entries.delete(key);
      if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
      const answer = apiKeys.authenticate(key);
      const entry = { answer, expiresAt: now() + options.ttlMs };
      entries.set(key, entry);
      // A failed lookup (database down) is not remembered: the next request asks again.
      answer.catch(() => {
        if (entries.get(key) === entry) entries.delete(key);
      });
      return answer;
    },
    forgetAll() {
      entries.clear();
    },
  };
}
