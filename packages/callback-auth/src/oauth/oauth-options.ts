import { createConnectGuard, createOutboundClient, type OutboundClient } from '@herald/outbound';
import { AuthConfigurationError } from '../errors/auth-configuration-error';
import type { AuthDependencies, RedisClient } from '../types';

/** `AuthDependencies` with defaults applied and values checked. */
export interface OAuthOptions {
  readonly redis: RedisClient;
  readonly keyPrefix: string;
  readonly tokenCacheSecret: Uint8Array;
  readonly tokenRequestTimeoutMs: number;
  readonly maxTokenResponseBytes: number;
  /** Undefined: the default margin, which depends on the token's lifetime. */
  readonly expiryMarginMs: number | undefined;
  readonly defaultTokenLifetimeSeconds: number;
  readonly tokenWaitMs: number;
  readonly tokenPollIntervalMs: number;
  readonly outbound: OutboundClient;
  readonly onTokenRequest: AuthDependencies['onTokenRequest'];
}

// As long as the HMAC-SHA256 output it keys: a shorter secret would be the weaker part.
const MIN_TOKEN_CACHE_SECRET_BYTES = 32;
const DEFAULT_TOKEN_REQUEST_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_TOKEN_RESPONSE_BYTES = 64 * 1024;
const DEFAULT_MAX_EXPIRY_MARGIN_MS = 30_000;
const DEFAULT_TOKEN_LIFETIME_SECONDS = 3_600;
// How much longer than a token request the fetch lock lives, and a waiter waits, by default: the holder
// also reads and writes Redis around its request.
const LOCK_SLACK_MS = 2_000;
const DEFAULT_TOKEN_POLL_INTERVAL_MS = 50;
// A token is refetched at least daily however long it claims to live; this also keeps the PX argument
// far from Redis's limits.
const MAX_CACHE_TTL_MS = 24 * 60 * 60 * 1000;

/** Applies the defaults documented on `AuthDependencies` and rejects bad values at once. */
export function resolveOAuthOptions(deps: AuthDependencies): OAuthOptions {
  if (typeof deps?.redis?.get !== 'function') throw new AuthConfigurationError('redis', 'oauth auth needs a Redis client');
  if (typeof deps.keyPrefix !== 'string') throw new AuthConfigurationError('keyPrefix', 'keyPrefix must be a string');
  if (!(deps.tokenCacheSecret instanceof Uint8Array) || deps.tokenCacheSecret.length < MIN_TOKEN_CACHE_SECRET_BYTES) {
    throw new AuthConfigurationError('tokenCacheSecret', `tokenCacheSecret must be a key of at least ${MIN_TOKEN_CACHE_SECRET_BYTES} bytes`);
  }
  const tokenRequestTimeoutMs = integer(deps, 'tokenRequestTimeoutMs', DEFAULT_TOKEN_REQUEST_TIMEOUT_MS, 1);
  return Object.freeze({
    redis: deps.redis,
    keyPrefix: deps.keyPrefix,
    tokenCacheSecret: deps.tokenCacheSecret,
    tokenRequestTimeoutMs,
    maxTokenResponseBytes: integer(deps, 'maxTokenResponseBytes', DEFAULT_MAX_TOKEN_RESPONSE_BYTES, 1),
    expiryMarginMs: deps.expiryMarginMs === undefined ? undefined : integer(deps, 'expiryMarginMs', 0, 0),
    defaultTokenLifetimeSeconds: integer(deps, 'defaultTokenLifetimeSeconds', DEFAULT_TOKEN_LIFETIME_SECONDS, 1),
    tokenWaitMs: integer(deps, 'tokenWaitMs', tokenRequestTimeoutMs + LOCK_SLACK_MS, 0),
    tokenPollIntervalMs: integer(deps, 'tokenPollIntervalMs', DEFAULT_TOKEN_POLL_INTERVAL_MS, 1),
    outbound: deps.outbound ?? unguardedClient(),
    onTokenRequest: deps.onTokenRequest,
  });
}

let unguarded: OutboundClient | undefined;

/**
 * One client for every strategy given none, so that they share its keep-alive connections; over
 * axios, as token requests are a cold path (see createOutboundClient).
 */
function unguardedClient(): OutboundClient {
  unguarded ??= createOutboundClient({ guard: createConnectGuard({ allowPrivate: true, hostAllowlist: [] }), transport: 'axios' });
  return unguarded;
}

/** How long the fetch lock lives: past the longest a holder can legitimately take. */
export function lockTtlMs(options: OAuthOptions): number {
  return options.tokenRequestTimeoutMs + LOCK_SLACK_MS;
}

/**
 * How long a token may stay cached; zero or less means "use it once, do not cache it". A token
 * given without `expires_in` lives `defaultTokenLifetimeSeconds`.
 */
export function cacheTtlMs(expiresInSeconds: number | undefined, options: OAuthOptions): number {
  const lifetimeMs = (expiresInSeconds ?? options.defaultTokenLifetimeSeconds) * 1000;
  const marginMs = options.expiryMarginMs ?? Math.min(DEFAULT_MAX_EXPIRY_MARGIN_MS, lifetimeMs / 10);
  return Math.min(Math.floor(lifetimeMs - marginMs), MAX_CACHE_TTL_MS);
}

type IntegerOption =
  | 'tokenRequestTimeoutMs'
  | 'maxTokenResponseBytes'
  | 'expiryMarginMs'
  | 'defaultTokenLifetimeSeconds'
  | 'tokenWaitMs'
  | 'tokenPollIntervalMs';

function integer(deps: AuthDependencies, name: IntegerOption, fallback: number, min: number): number {
  const value = deps[name] ?? fallback;
  if (!Number.isSafeInteger(value) || value < min) {
    throw new AuthConfigurationError(name, `${name} must be an integer of at least ${min}`);
  }
  return value;
}
