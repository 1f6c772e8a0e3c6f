import type { TokenRequestFailureKind } from './errors/token-request-error';
import type { OAuthTokenRequest } from '@herald/domain';
import type { OutboundClient } from '@herald/outbound';
import type { Cluster, Redis } from 'ioredis';

/** How callbacks to one notification target authenticate (spec: "Callbacks sent by the service"). */
export type AuthMode = 'none' | 'basic' | 'oauth';

/** The auth part of one notification target's settings, as stored for the merchant. */
export interface TargetAuthSettings {
  /** Stable id of the notification target; part of the token cache key and of error messages. */
  targetId: string;
  mode: AuthMode;
  /** OAuth only: the merchant's Authentication URL, absolute http(s), without user info. */
  authUrl?: string;
  /** Basic and OAuth: the user name the merchant gave. Must not contain ':' (RFC 7617). */
  username?: string;
  /** Basic and OAuth: the password the merchant gave. */
  password?: string;
  /**
   * OAuth only: how the token is requested. `spec` (default): the spec's request, a JSON body with
   * the credentials, `?grant_type=client_credentials` in the query and Basic credentials. `form`:
   * RFC 6749 §4.4, the request of standard OAuth 2.0 servers, a form-encoded body and Basic
   * credentials form-encoded first (§2.3.1).
   */
  tokenRequest?: OAuthTokenRequest;
  /** OAuth only: the scope to ask for (RFC 6749 §3.3), sent in either request; none when absent. */
  scope?: string;
}

/** Adds the authentication of one target to its callback POSTs. One implementation per mode. */
export interface CallbackAuthStrategy {
  readonly mode: AuthMode;
  /**
   * Headers to add to one callback POST, with lower-case names (e.g. `{ authorization: 'Bearer …' }`),
   * fetching or reusing a token when the mode needs one. Throws a `CallbackAuthError` subclass when no
   * credential can be had; Redis errors propagate as they are.
   */
  headers(): Promise<Record<string, string>>;
  /**
   * The target answered 401: forget the credential this instance last handed out, so that the next
   * `headers()` (in any process) gets a fresh one. Resolves in every state of the strategy.
   */
  invalidate(): Promise<void>;
}

/** A connection to one Redis server or to a Redis Cluster: the token cache uses only single-key commands. */
export type RedisClient = Redis | Cluster;

/** What the strategies need from the outside world. Only the OAuth strategy uses it today. */
export interface AuthDependencies {
  /**
   * Redis connection holding the shared token cache and the fetch lock, so that all worker processes
   * reuse one token per target. Not closed by this module. Strategies built on the same client also
   * share one in-flight token request per target inside the process.
   */
  redis: RedisClient;
  /** Prefix of every key written, e.g. `herald:`; tests pass a fresh one. */
  keyPrefix: string;
  /**
   * Secret key of the token cache, at least 32 bytes, the same in every process that shares its
   * tokens (the delivery worker passes SECRETS_KEY). Keys the hash that names a token's Redis keys
   * and derives the key that encrypts it, so that whoever can list or read Redis can neither test
   * password guesses against a key name nor decrypt a token. Another secret means other key names:
   * tokens are fetched anew once, and the old entries expire with their TTL.
   */
  tokenCacheSecret: Uint8Array;
  /** Hard limit on one token request, from connect to the last body byte, in ms. Default 10 000. */
  tokenRequestTimeoutMs?: number;
  /** Largest token response body read, in bytes; a larger one is an `invalid_response`. Default 65 536. */
  maxTokenResponseBytes?: number;
  /**
   * Taken off `expires_in` before the token is cached, so that a token is never sent in its last moments.
   * Default: the smaller of 30 s and a tenth of the token's lifetime. A token whose lifetime is not longer
   * than the margin is used for the callback that fetched it and not cached.
   */
  expiryMarginMs?: number;
  /**
   * The lifetime assumed for a token whose response carries no `expires_in` (RFC 6749 only
   * recommends it), in seconds: it is cached that long, less the margin. A token the merchant
   * revokes or lets expire sooner is answered with 401 by the receiver, which drops it from the
   * cache and fetches a new one. Default 3 600.
   */
  defaultTokenLifetimeSeconds?: number;
  /**
   * How long `headers()` waits for a token that another process is fetching before it fails with
   * `TokenWaitTimeoutError`, in ms. Default `tokenRequestTimeoutMs` + 2 000.
   */
  tokenWaitMs?: number;
  /** Interval between cache reads while waiting for another process's token, in ms. Default 50. */
  tokenPollIntervalMs?: number;
  /**
   * Sends the token request (time limit, bounded read, no redirects, Herald's User-Agent). The
   * delivery worker passes an axios client with its callbacks' connect guard, which checks the
   * Authentication URL's address against the SSRF policy. Default: an axios client with no address
   * policy.
   */
  outbound?: OutboundClient;
  /**
   * Called once for every HTTP request to a token endpoint, when it has ended, with how:
   * `issued`, or the TokenRequestFailureKind of its failure (not for tokens reused from the cache
   * or from another process's fetch), e.g. to count token requests by outcome in metrics. Must
   * not throw.
   */
  onTokenRequest?: (outcome: TokenRequestOutcome) => void;
}

/** How one token request ended: a token `issued`, or how it failed (`unexpected`: an error of Herald's own, not the endpoint's). */
export type TokenRequestOutcome = 'issued' | TokenRequestFailureKind | 'unexpected';
