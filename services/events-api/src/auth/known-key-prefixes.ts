import type { ApiKeyRepository } from '@herald/db';

/** The prefixes of the API keys in use (apiKeyPrefixOf), as far as this process knows them. */
export interface KnownKeyPrefixes {
  /**
   * Whether a key with this prefix may exist: a key in use had it at the last reload, or one was
   * made or found since. Until the first reload every prefix counts as known. Starts a reload in
   * the background when the last is older than the reload interval.
   */
  has(prefix: string): boolean;
  /** Remembers the prefix of a key made here, or found by a lookup, before the next reload reads it. */
  add(prefix: string): void;
}

export interface KnownKeyPrefixesOptions {
  /** How old the prefixes may be before the next use reloads them, in ms. */
  reloadMs: number;
  /** Told when a reload fails (the old prefixes stay in use). */
  onReloadError?: (error: unknown) => void;
  /** The clock, in milliseconds (tests pass their own). Default `Date.now`. */
  now?: () => number;
}

/**
 * Keeps the prefixes of the keys in use in memory, so that a made-up key (whose prefix, 36 random
 * bits, matches no key's) is told apart from a key that may exist without asking the database.
 * Reloaded whole on use, at most once per `reloadMs` (a few bytes per key; no timer to stop). A
 * key revoked since the last reload keeps its prefix known until the next, which only means its
 * lookups go to the database as before.
 */
export function createKnownKeyPrefixes(apiKeys: Pick<ApiKeyRepository, 'knownPrefixes'>, options: KnownKeyPrefixesOptions): KnownKeyPrefixes {
  const now = options.now ?? Date.now;
  let prefixes: Set<string> | undefined;
  // Keys made or found since the reload now under way started: kept across its answer.
  let addedDuringReload: string[] = [];
  let loadedAt = Number.NEGATIVE_INFINITY;
  let reloading = false;

  const reload = (): void => {
    reloading = true;
    loadedAt = now();
    addedDuringReload = [];
    apiKeys.knownPrefixes().then(
      (loaded) => {
        prefixes = new Set([...loaded, ...addedDuringReload]);
        reloading = false;
      },
      (error: unknown) => {
        reloading = false;
        options.onReloadError?.(error);
      },
    );
  };

  return {
    has(prefix) {
      if (!reloading && now() - loadedAt >= options.reloadMs) reload();
      return prefixes === undefined || prefixes.has(prefix);
    },
    add(prefix) {
      prefixes?.add(prefix);
      if (reloading) addedDuringReload.push(prefix);
    },
  };
}
