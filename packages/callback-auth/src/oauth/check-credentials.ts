import type { AuthDependencies, TargetAuthSettings } from '../types';
import { cacheTtlMs, resolveOAuthOptions } from './oauth-options';
import { TokenCache } from './token-cache';
import { buildTokenRequest, requestToken } from './token-request';

/** OAuth settings the token endpoint accepted, holding the token it issued (never shown). */
export interface CheckedOAuthCredentials {
  /**
   * Stores the issued token in the shared cache as the token of target `targetId` (known once the
   * target is saved), so that its first callback needs no token request of its own. A token too
   * short-lived to cache is not stored.
   */
  primeCache(targetId: string): Promise<void>;
}

/**
 * Makes one token request with `settings` now, outside the cache and its lock: the check of an
 * OAuth target's credentials when an admin saves it. `settings.targetId` only names the target in
 * messages. Throws `TokenRequestError` with the endpoint's answer when it issues no token, and
 * `AuthConfigurationError` when the settings cannot be used.
 */
export async function checkOAuthCredentials(settings: TargetAuthSettings, deps: AuthDependencies): Promise<CheckedOAuthCredentials> {
  const request = buildTokenRequest(settings);
  const options = resolveOAuthOptions(deps);
  const { accessToken, expiresInSeconds } = await requestToken(request, {
    timeoutMs: options.tokenRequestTimeoutMs,
    maxResponseBytes: options.maxTokenResponseBytes,
    outbound: options.outbound,
    onOutcome: options.onTokenRequest,
  });
  return {
    async primeCache(targetId) {
      const ttlMs = cacheTtlMs(expiresInSeconds, options);
      if (ttlMs > 0) await new TokenCache(options, { ...request, targetId }).store(accessToken, ttlMs);
    },
  };
}
