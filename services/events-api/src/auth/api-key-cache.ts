import type { ApiKeyRepository } from '@herald/db';
import type { SourcedKeyLookup } from './unknown-key-limit';

type Authentication = Awaited<ReturnType<ApiKeyRepository['authenticate']>>;

/** What GET /events asks of API keys: who a key is, with a cache in front of the database. */
export interface ApiKeyAuthenticator {
  /**
   * The key's id and scope, or null when it is unknown or revoked (possibly as of `ttlMs` ago).
   * `source`: whom the request came from (clientKey), for the limits of the lookups.
   */
  authenticate(key: string, source: string): Promise<Authentication>;
  /** Drops every remembered answer: called when this process revokes a key, so it is refused at once. */
  forgetAll(): void;
  /** How many answers are remembered, and the memory they are counted as. */
  usage(): { entries: number; bytes: number };
}

export interface ApiKeyCacheOptions {
  /** How long an answer is reused; 0 asks the database every time. */
  ttlMs: number;
  /** Most keys remembered; the oldest answer is dropped first. Default 10,000. */
  maxEntries?: number;
  /** Most memory the remembered answers may take (see ENTRY_BYTES); the oldest answer is dropped first. Default 8 MiB. */
  maxBytes?: number;
  /** The clock, in milliseconds (tests pass their own). Default `Date.now`. */
  now?: () => number;
}

// What one remembered answer is counted as besides its key: the map entry, the promise and the
// answer object (ids and scope), rounded up from a heap snapshot.
const ENTRY_BYTES = 512;

/**
 * Remembers each key's answer (unknown keys included, so a flood of bad keys does not reach the
 * database) for `ttlMs`. Revocation through another process therefore takes effect within
 * `ttlMs` here. Answers live only in this process's memory and are never logged.
 * Lookups of one key that overlap share one query. A known key in use is looked up again in the
 * background during the last fifth of its answer's life, and the fresh answer replaces the old,
 * so a busy key's requests never all wait on one lookup when its answer expires (the revocation
 * bound stays `ttlMs`: an answer is never served longer than that after its lookup started).
 *
 * Memory is bounded by both `maxEntries` and `maxBytes` (a key counts two bytes a character), and
 * expired answers are dropped whenever the cache is used: answers are kept in the order they
 * expire, so the expired ones are always at the front.
 */
export function createApiKeyCache(apiKeys: SourcedKeyLookup, options: ApiKeyCacheOptions): ApiKeyAuthenticator {
  const maxEntries = options.maxEntries ?? 10_000;
  const maxBytes = options.maxBytes ?? 8 * 1024 * 1024;
  const now = options.now ?? Date.now;
  /** `known`: the lookup found a key (set once it settles); `refreshing`: a background lookup is under way. */
  type Entry = { answer: Promise<Authentication>; expiresAt: number; known?: boolean; refreshing?: boolean };
  const entries = new Map<string, Entry>();
  let bytes = 0;

  const sizeOf = (key: string): number => key.length * 2 + ENTRY_BYTES;
  const remove = (key: string): void => {
    if (entries.delete(key)) bytes -= sizeOf(key);
  };
  const dropExpired = (at: number): void => {
    for (const [key, entry] of entries) {
      if (entry.expiresAt > at) return;
      remove(key);
    }
  };

  /** Looks `key` up and remembers the answer from `at` on (the newest entry goes last: entries stay in expiry order). */
  const remember = (key: string, at: number, source: string): Promise<Authentication> => {
    const answer = apiKeys.authenticate(key, source);
    // A key too large to remember at all is still answered, just not kept.
    if (sizeOf(key) > maxBytes) return answer;
    while (entries.size >= maxEntries || bytes + sizeOf(key) > maxBytes) remove(entries.keys().next().value!);
    const entry: Entry = { answer, expiresAt: at + options.ttlMs };
    entries.set(key, entry);
    bytes += sizeOf(key);
    answer.then(
      (auth) => {
        entry.known = auth !== null;
      },
      // A failed lookup (database down, lookups limited) is not remembered: the next request asks again.
      () => {
        if (entries.get(key) === entry) remove(key);
      },
    );
    return answer;
  };

  /** Looks a known key up again while its answer still serves; the fresh answer replaces it once it arrives. */
  const refresh = (key: string, entry: Entry, at: number, source: string): void => {
    entry.refreshing = true;
    apiKeys.authenticate(key, source).then(
      (auth) => {
        if (entries.get(key) !== entry) return;
        remove(key);
        entries.set(key, { answer: Promise.resolve(auth), expiresAt: at + options.ttlMs, known: auth !== null });
        bytes += sizeOf(key);
      },
      () => {
        // The old answer keeps serving until it expires; the next request tries again.
        entry.refreshing = false;
      },
    );
  };

  return {
    authenticate(key, source) {
      if (options.ttlMs <= 0) return apiKeys.authenticate(key, source);
      const at = now();
      dropExpired(at);
      const cached = entries.get(key);
      if (!cached) return remember(key, at, source);
      if (cached.known && !cached.refreshing && at >= cached.expiresAt - options.ttlMs / 5) refresh(key, cached, at, source);
      return cached.answer;
    },
    forgetAll() {
      entries.clear();
      bytes = 0;
    },
    usage: () => ({ entries: entries.size, bytes }),
  };
}
