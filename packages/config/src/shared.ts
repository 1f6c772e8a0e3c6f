/**
 * The settings both services read (the events-api and the delivery-worker), and how to read them.
 * Each service's loader adds its own on top; nothing here is a secret only one of them needs.
 */
import { ConfigError } from './config-error';
import { boolean, duration, hostList, integer, listenHost, oneOf, optionalSecret, parseKey, raw, text, url, type Env } from './parsers';
import { parseRedisUrl, redisKeyPrefix } from './redis-url';

export type NodeEnv = 'development' | 'test' | 'production';
export type LogLevel = 'error' | 'warn' | 'info' | 'http' | 'debug';

const DEFAULT_DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/herald';
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

// A scraper's credential, typed once into its configuration.
const METRICS_TOKEN_MIN_LENGTH = 16;

const NODE_ENVS = ['development', 'test', 'production'] as const;
const SECRETS_KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
// A published key: good only for development and tests, refused in production.
const SECRETS_KEY_MIN_DISTINCT_BYTES = 8;
const DEV_SECRETS_KEY = Buffer.from('herald-development-secrets-key!!', 'utf8');

/** The keys that encrypt the notification targets' stored credentials. */
export interface SecretsKeyring {
  /**
   * SECRETS_KEY: 32-byte key (64 hex characters or base64) that encrypts stored credentials.
   * Required in production; elsewhere a fixed development key is used.
   */
  readonly secretsKey: Buffer;
  /** SECRETS_KEY_ID: names the key in stored ciphertexts so keys can rotate. Default `k1`. */
  readonly secretsKeyId: string;
  /**
   * SECRETS_PREVIOUS_KEYS: keys retired by a rotation that may still have written stored credentials,
   * by key id (`id:key` pairs, comma-separated, each key like SECRETS_KEY). Read, never written with.
   * Default none.
   */
  readonly secretsPreviousKeys: Readonly<Record<string, Buffer>>;
}

/** Where notification targets (and OAuth Authentication URLs) may point: checked when stored and when connecting. */
export interface TargetPolicyConfig {
  /**
   * ALLOW_PRIVATE_TARGETS (`true` or `false`): whether notification target URLs (and OAuth
   * Authentication URLs) may point at loopback, private, link-local, CGNAT or cloud metadata
   * addresses. Default `false` when NODE_ENV=production, `true` otherwise (local receivers in
   * development and tests).
   */
  readonly allowPrivateTargets: boolean;
  /**
   * TARGET_HOST_ALLOWLIST: comma-separated host names (or IP addresses) that targets may always
   * use, even when private targets are not allowed, e.g. an internal receiver. Compared
   * case-insensitively with the URL's host. Default: none.
   */
  readonly targetHostAllowlist: readonly string[];
}

/** What each job added to the deliveries queue carries: how often it is tried and how long it is kept. */
export interface DeliveryJobsConfig {
  /** DELIVERY_ATTEMPTS: tries of a callback in all, the first included. Default 22 (about three days with the default waits). */
  readonly attempts: number;
  /** JOBS_KEEP_COMPLETED_SECONDS: how long delivered jobs stay in Redis (dashboard). Default 1 day. */
  readonly keepCompletedSeconds: number;
  /** JOBS_KEEP_FAILED_SECONDS: how long jobs that used every attempt stay for ops to retry. Default 14 days. */
  readonly keepFailedSeconds: number;
  /** JOBS_KEEP_COMPLETED_MAX: most delivered jobs kept, whatever their age. Default 100,000. */
  readonly keepCompletedMax: number;
  /** JOBS_KEEP_FAILED_MAX: most failed jobs kept, whatever their age. Default 100,000. */
  readonly keepFailedMax: number;
}

/**
 * Limits of one callback and of one OAuth token request: the worker's deliveries, and the
 * events-api's credential checks and test callbacks.
 */
export interface CallbackConfig {
  /** CALLBACK_TIMEOUT_MS: longest one callback POST may take, from connecting to the last byte read. Default 10000. */
  readonly timeoutMs: number;
  /** CALLBACK_RESPONSE_MAX_BYTES: most bytes of the merchant's answer read and kept in the attempt log; the rest is not read. Default 4096. */
  readonly responseMaxBytes: number;
  /** OAUTH_TOKEN_TIMEOUT_MS: longest one OAuth token request may take. Default 10000. */
  readonly tokenTimeoutMs: number;
  /**
   * OAUTH_TOKEN_DEFAULT_LIFETIME_SECONDS: the lifetime assumed for a token whose response has no
   * expires_in (RFC 6749 only recommends it); it is cached that long, less the margin, and a 401
   * of the receiver still drops it sooner. 1 to 86400. Default 3600.
   */
  readonly tokenDefaultLifetimeSeconds: number;
}

/**
 * Failed authentications per client address, in each process that checks a guessable credential:
 * in the events-api a wrong admin or ingest token, dashboard login or METRICS_TOKEN (one table for
 * all of them), in the delivery-worker a wrong METRICS_TOKEN. A missing credential does not count,
 * and neither does a wrong x-api-key (see UNKNOWN_API_KEYS_*). The address is the TCP peer's (no
 * service trusts X-Forwarded-For), an IPv6 address counted by its /64 network.
 */
export interface AuthFailuresConfig {
  /**
   * AUTH_FAILURES_PER_ADDRESS: failed authentications one address may make in a window; past it,
   * every authentication from it is answered 429 (with Retry-After) until the window ends, right
   * credentials included. 1 to 1000000. Default 20.
   */
  readonly perAddress: number;
  /** AUTH_FAILURE_WINDOW_SECONDS: the window, from an address's first failure. 1 to 86400. Default 60. */
  readonly windowSeconds: number;
  /**
   * AUTH_FAILURE_MAX_ADDRESSES: most addresses remembered at once (a hard memory bound); past it
   * the oldest is forgotten. 1 to 10000000. Default 10000.
   */
  readonly maxAddresses: number;
}

export function readAuthFailures(env: Env): AuthFailuresConfig {
  return {
    perAddress: integer(env, 'AUTH_FAILURES_PER_ADDRESS', 20, 1, 1_000_000),
    windowSeconds: integer(env, 'AUTH_FAILURE_WINDOW_SECONDS', 60, 1, 86_400),
    maxAddresses: integer(env, 'AUTH_FAILURE_MAX_ADDRESSES', 10_000, 1, 10_000_000),
  };
}

/** Who may read `/metrics`. */
export interface MetricsConfig {
  /**
   * METRICS_TOKEN: when set, `/metrics` on both services requires `Authorization: Bearer <token>`
   * (at least 16 characters); unset, `/metrics` is open, so set it wherever the events-api's port is
   * reachable from outside. Default: unset.
   */
  readonly token: string | undefined;
}

/** The settings of both services: stores, queue, logging, shutdown, the secrets keyring and the target policy. */
export interface ServiceConfig extends SecretsKeyring, TargetPolicyConfig {
  /** NODE_ENV. `production` refuses the development defaults of secrets. Default `development`. */
  readonly nodeEnv: NodeEnv;
  /** DATABASE_URL. Default `postgresql://postgres@127.0.0.1:5432/herald`. */
  readonly databaseUrl: string;
  /**
   * REDIS_URL: one server (`redis://`, `rediss://`) or a Redis Cluster (`redis+cluster://` or
   * `rediss+cluster://`, comma-separated seed nodes: see redis-url.ts). Default `redis://127.0.0.1:6379`.
   */
  readonly redisUrl: string;
  /**
   * The prefix of every Herald key in Redis, from QUEUE_PREFIX (default `herald`), so several
   * Herald installs (or test runs) share a Redis: QUEUE_PREFIX itself on one server, `{QUEUE_PREFIX}`
   * (a hash tag: one hash slot) on a cluster.
   */
  readonly queuePrefix: string;
  /** LOG_LEVEL. Default `info` (`warn` under NODE_ENV=test). */
  readonly logLevel: LogLevel;
  /** SHUTDOWN_TIMEOUT_MS: how long a service waits for in-flight work on SIGTERM. Default 10000. */
  readonly shutdownTimeoutMs: number;
  /** READINESS_TIMEOUT_MS: how long /readyz waits for PostgreSQL and Redis. Default 2000. */
  readonly readinessTimeoutMs: number;
  /** ENQUEUE_TIMEOUT_MS: longest wait for Redis when adding jobs; what misses it stays for the sweeper. Default 2000. */
  readonly enqueueTimeoutMs: number;
}

export function readNodeEnv(env: Env): NodeEnv {
  return oneOf(env, 'NODE_ENV', NODE_ENVS, 'development');
}

export function readDatabaseUrl(env: Env): string {
  return url(env, 'DATABASE_URL', ['postgres:', 'postgresql:'], DEFAULT_DATABASE_URL);
}

/** Reads the settings of ServiceConfig (not frozen: the caller freezes the whole). */
export function readServiceConfig(env: Env): ServiceConfig {
  const nodeEnv = readNodeEnv(env);
  const production = nodeEnv === 'production';
  const redisUrl = raw(env, 'REDIS_URL') ?? DEFAULT_REDIS_URL;
  return {
    nodeEnv,
    databaseUrl: readDatabaseUrl(env),
    redisUrl,
    queuePrefix: redisKeyPrefix(text(env, 'QUEUE_PREFIX', 'herald', /^[A-Za-z0-9_.-]{1,64}$/), parseRedisUrl(redisUrl)),
    logLevel: oneOf(env, 'LOG_LEVEL', ['error', 'warn', 'info', 'http', 'debug'] as const, nodeEnv === 'test' ? 'warn' : 'info'),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    readinessTimeoutMs: integer(env, 'READINESS_TIMEOUT_MS', 2_000, 50, 60_000),
    enqueueTimeoutMs: integer(env, 'ENQUEUE_TIMEOUT_MS', 2_000, 50, 60_000),
    ...readSecretsKeyring(env, production),
    allowPrivateTargets: boolean(env, 'ALLOW_PRIVATE_TARGETS', !production),
    targetHostAllowlist: hostList(env, 'TARGET_HOST_ALLOWLIST'),
  };
}

/** The loopback address development and tests listen on unless HOST says otherwise. */
const LOOPBACK_HOST = '127.0.0.1';

/**
 * HOST: the address the events-api and each worker's monitoring listener bind. Outside production
 * the default is loopback, since those processes accept the public development tokens and
 * password; production binds what HOST says, every interface when it is unset (a container's
 * port is published from its own network interface).
 */
export function readHost(env: Env, nodeEnv: NodeEnv): string | undefined {
  return listenHost(env, 'HOST', nodeEnv === 'production' ? undefined : LOOPBACK_HOST);
}

/**
 * The global defaults of every target's delivery policy (a target's own values override them):
 * the worker applies them, the events-api shows them in a target's effective policy.
 */
export interface DeliveryDefaultsConfig {
  /** DELIVERY_ATTEMPTS. */
  readonly attempts: number;
  /** DELIVERY_BACKOFF_MAX_MS. */
  readonly maxBackoffMs: number;
  /** CALLBACK_TIMEOUT_MS. */
  readonly timeoutMs: number;
  /** TARGET_MAX_IN_FLIGHT; 0 for no limit. */
  readonly maxInFlight: number;
}

/** DELIVERY_BACKOFF_MAX_MS: longest wait between two tries, where the doubling stops. Default 21600000 (6 hours). */
export function readBackoffMaxMs(env: Env): number {
  return integer(env, 'DELIVERY_BACKOFF_MAX_MS', 21_600_000, 1, 7 * 86_400_000);
}

/** TARGET_MAX_IN_FLIGHT: most callbacks of one target in flight at once, across every worker; 0 for no limit. Default 16. */
export function readTargetMaxInFlight(env: Env): number {
  return integer(env, 'TARGET_MAX_IN_FLIGHT', 16, 0, 10_000);
}

/** The settings that are the defaults of a target's delivery policy (see DeliveryDefaultsConfig). */
export function readDeliveryDefaults(env: Env): DeliveryDefaultsConfig {
  return Object.freeze({
    attempts: readDeliveryJobs(env).attempts,
    maxBackoffMs: readBackoffMaxMs(env),
    timeoutMs: readCallback(env).timeoutMs,
    maxInFlight: readTargetMaxInFlight(env),
  });
}

export function readDeliveryJobs(env: Env): DeliveryJobsConfig {
  return {
    attempts: integer(env, 'DELIVERY_ATTEMPTS', 22, 1, 100),
    keepCompletedSeconds: integer(env, 'JOBS_KEEP_COMPLETED_SECONDS', 86_400, 0, 31_536_000),
    keepFailedSeconds: integer(env, 'JOBS_KEEP_FAILED_SECONDS', 14 * 86_400, 0, 31_536_000),
    // Redis memory must not grow with traffic: a finished job is about 1.6 KB, so a day of
    // completed jobs at 200 callbacks/s alone would be 27 GB. The delivery history is PostgreSQL's.
    keepCompletedMax: integer(env, 'JOBS_KEEP_COMPLETED_MAX', 100_000, 0, 10_000_000),
    keepFailedMax: integer(env, 'JOBS_KEEP_FAILED_MAX', 100_000, 0, 10_000_000),
  };
}

export function readMetrics(env: Env): MetricsConfig {
  return { token: optionalSecret(env, 'METRICS_TOKEN', METRICS_TOKEN_MIN_LENGTH) };
}

export function readSecretsKeyring(env: Env, production: boolean): SecretsKeyring {
  const secretsKeyId = text(env, 'SECRETS_KEY_ID', 'k1', SECRETS_KEY_ID);
  return {
    secretsKey: secretsKey(env, production),
    secretsKeyId,
    secretsPreviousKeys: secretsPreviousKeys(env, secretsKeyId),
  };
}

function secretsKey(env: Env, production: boolean): Buffer {
  const name = 'SECRETS_KEY';
  const value = raw(env, name);
  if (value === undefined) {
    if (production) throw new ConfigError(name, 'is required when NODE_ENV=production');
    return DEV_SECRETS_KEY;
  }
  const key = parseKey(name, value);
  if (production && key.equals(DEV_SECRETS_KEY)) {
    throw new ConfigError(name, 'must not be the development key in production');
  }
  // All zeros, one byte repeated or a short pattern: a placeholder, not a key from a random source
  // (32 random bytes hold fewer than 8 distinct values with a chance far below 1 in 10^30).
  if (production && new Set(key).size < SECRETS_KEY_MIN_DISTINCT_BYTES) {
    throw new ConfigError(name, `must hold at least ${SECRETS_KEY_MIN_DISTINCT_BYTES} distinct byte values in production`);
  }
  return key;
}

function secretsPreviousKeys(env: Env, currentKeyId: string): Readonly<Record<string, Buffer>> {
  const name = 'SECRETS_PREVIOUS_KEYS';
  const value = raw(env, name);
  const keys: Record<string, Buffer> = {};
  if (value === undefined) return Object.freeze(keys);
  for (const pair of value.split(',')) {
    const separator = pair.indexOf(':');
    const id = pair.slice(0, separator).trim();
    if (separator < 0 || !SECRETS_KEY_ID.test(id)) throw new ConfigError(name, 'must be comma-separated id:key pairs, each id matching [A-Za-z0-9_-]{1,32}');
    if (id in keys) throw new ConfigError(name, `names key id ${id} twice`);
    if (id === currentKeyId) throw new ConfigError(name, `names key id ${id}, which is SECRETS_KEY_ID: a previous key needs an id of its own`);
    // The error names the key id, never the key.
    keys[id] = parseKey(`${name} (key id ${id})`, pair.slice(separator + 1).trim());
  }
  return Object.freeze(keys);
}

/** CALLBACK_TIMEOUT_MS, CALLBACK_RESPONSE_MAX_BYTES, OAUTH_TOKEN_TIMEOUT_MS and OAUTH_TOKEN_DEFAULT_LIFETIME_SECONDS. */
export function readCallback(env: Env): CallbackConfig {
  return {
    timeoutMs: integer(env, 'CALLBACK_TIMEOUT_MS', 10_000, 10, 600_000),
    responseMaxBytes: integer(env, 'CALLBACK_RESPONSE_MAX_BYTES', 4_096, 0, 1_048_576),
    tokenTimeoutMs: integer(env, 'OAUTH_TOKEN_TIMEOUT_MS', 10_000, 10, 600_000),
    tokenDefaultLifetimeSeconds: integer(env, 'OAUTH_TOKEN_DEFAULT_LIFETIME_SECONDS', 3_600, 1, 86_400),
  };
}

/**
 * TARGET_AUTO_DISABLE_AFTER: a target whose every attempt has failed for this long is switched off
 * (reason `auto-disabled`) at its next failed attempt. Whole seconds or a number with a unit s, m,
 * h or d; 0 turns auto-disable off. Default 5d (432000000 ms). The worker applies it; the API shows
 * merchants when it would (GET /notification-target), so both read it from the same rule.
 */
export function readTargetAutoDisableAfterMs(env: Env): number {
  return duration(env, 'TARGET_AUTO_DISABLE_AFTER', 5 * 86_400_000, 0, 365 * 86_400_000);
}
