import { setTimeout as sleep } from 'node:timers/promises';
import { TokenWaitTimeoutError } from '../errors/token-wait-timeout-error';
import { cacheTtlMs, lockTtlMs, resolveOAuthOptions, type OAuthOptions } from '../oauth/oauth-options';
import { TokenCache } from '../oauth/token-cache';
import { buildTokenRequest, requestToken, type TokenRequest } from '../oauth/token-request';
import type { AuthDependencies, CallbackAuthStrategy, RedisClient, TargetAuthSettings } from '../types';

// Token lookups under way, per Redis client and token key: the concurrent callbacks of one process
// share one lookup. Keyed by client so that strategies on separate clients behave like separate
// processes; across processes the Redis lock does the same job.
const lookupsInFlight = new WeakMap<RedisClient, Map<string, Promise<string>>>();

/**
 * OAuth 2.0 client credentials (spec): callbacks carry `Authorization: Bearer {access_token}`, the token
 * being fetched from the merchant's authUrl once and reused from Redis by every process until shortly
 * before it expires.
 */
export class OAuthStrategy implements CallbackAuthStrategy {
  readonly mode = 'oauth';
  readonly #request: TokenRequest;
  readonly #options: OAuthOptions;
  readonly #cache: TokenCache;
  /** The token this instance last handed out: the one a 401 answer refers to. */
  #lastToken: string | undefined;

  constructor(settings: TargetAuthSettings, deps: AuthDependencies) {
    this.#request = buildTokenRequest(settings);
    this.#options = resolveOAuthOptions(deps);
    this.#cache = new TokenCache(this.#options, this.#request);
  }

  async headers(): Promise<Record<string, string>> {
    const token = await this.#sharedLookup();
    this.#lastToken = token;
    return { authorization: `Bearer ${token}` };
  }

  async invalidate(): Promise<void> {
    const token = this.#lastToken;
    this.#lastToken = undefined;
    if (token !== undefined) await this.#cache.deleteIfCurrent(token);
  }

  #sharedLookup(): Promise<string> {
    let lookups = lookupsInFlight.get(this.#options.redis);
    if (lookups === undefined) {
      lookups = new Map();
      lookupsInFlight.set(this.#options.redis, lookups);
    }
    const key = this.#cache.tokenKey;
    const running = lookups.get(key);
    if (running !== undefined) return running;
    const lookup = this.#cachedOrFetchedToken().finally(() => lookups.delete(key));
    lookups.set(key, lookup);
    return lookup;
  }

  /**
   * The cached token, or one fetched under the lock. Not a retry loop: it waits, bounded by tokenWaitMs,
   * for another process's fetch, and makes at most one token request itself.
   */
  async #cachedOrFetchedToken(): Promise<string> {
    const { tokenWaitMs, tokenPollIntervalMs } = this.#options;
    const deadline = Date.now() + tokenWaitMs;
    for (;;) {
      const cached = await this.#cache.read();
      if (cached !== undefined) return cached;
      // A free lock with no token means nobody is fetching (or the last fetch failed): fetch here.
      const holder = await this.#cache.tryLock(lockTtlMs(this.#options));
      if (holder !== undefined) return this.#fetchUnderLock(holder);
      const remainingMs = deadline - Date.now();
      if (remainingMs <= 0) throw new TokenWaitTimeoutError(this.#request.targetId, tokenWaitMs);
      await sleep(Math.min(tokenPollIntervalMs, remainingMs));
    }
  }

  async #fetchUnderLock(holder: string): Promise<string> {
    try {
      // Another process may have stored a token between our read and our lock.
      const cached = await this.#cache.read();
      if (cached !== undefined) return cached;
      const { accessToken, expiresInSeconds } = await requestToken(this.#request, {
        timeoutMs: this.#options.tokenRequestTimeoutMs,
        maxResponseBytes: this.#options.maxTokenResponseBytes,
        outbound: this.#options.outbound,
        onOutcome: this.#options.onTokenRequest,
      });
      const ttlMs = cacheTtlMs(expiresInSeconds, this.#options);
      if (ttlMs > 0) await this.#cache.store(accessToken, ttlMs);
      return accessToken;
    } finally {
      await this.#cache.unlock(holder);
    }
  }
}
