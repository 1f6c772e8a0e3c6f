/**
 * Herald's configuration: the only module that reads process.env. Every service calls
 * `loadConfig()` once at start-up and passes the frozen result down; a bad value stops the
 * process at once with a message naming the variable.
 */
import { isIP } from 'node:net';

export type NodeEnv = 'development' | 'test' | 'production';
export type LogLevel = 'error' | 'warn' | 'info' | 'http' | 'debug';

export interface Config {
  /** NODE_ENV. `production` refuses the development defaults of secrets. Default `development`. */
  readonly nodeEnv: NodeEnv;
  /** DATABASE_URL. Default `postgresql://postgres@127.0.0.1:5432/herald`. */
  readonly databaseUrl: string;
  /** REDIS_URL. Default `redis://127.0.0.1:6379`. */
  readonly redisUrl: string;
  /** QUEUE_PREFIX: BullMQ key prefix, so several Herald installs (or test runs) share a Redis. Default `herald`. */
  readonly queuePrefix: string;
  /** PORT of the events-api. Default 3000. */
  readonly port: number;
  /** ADMIN_TOKEN: bearer token of the admin API. Required in production (at least 32 characters). */
  readonly adminToken: string;
  /** INGEST_TOKEN: bearer token of the internal ingest endpoint. Required in production (at least 32 characters). */
  readonly ingestToken: string;
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
  /** LOG_LEVEL. Default `info` (`warn` under NODE_ENV=test). */
  readonly logLevel: LogLevel;
  /** SHUTDOWN_TIMEOUT_MS: how long a service waits for in-flight work on SIGTERM. Default 10000. */
  readonly shutdownTimeoutMs: number;
  /** READINESS_TIMEOUT_MS: how long /readyz waits for PostgreSQL and Redis. Default 2000. */
  readonly readinessTimeoutMs: number;
  /** RATE_LIMIT_REQUESTS: GET /events requests allowed per API key in each window. Default 100. */
  readonly rateLimitRequests: number;
  /** RATE_LIMIT_WINDOW_SECONDS: length of the rate limit window. Default 1. */
  readonly rateLimitWindowSeconds: number;
  /**
   * API_KEY_CACHE_MS: how long each events-api process remembers what an x-api-key authenticates as
   * (or that it is unknown), so GET /events skips that query. A key revoked through another process,
   * or in the database directly, is refused at the latest this long after; the process that
   * revokes it forgets at once. 0 turns the cache off. Default 5000.
   */
  readonly apiKeyCacheMs: number;
  /** INGEST_BODY_LIMIT_BYTES: largest ingest request body. Default 5 MiB (1,000 events of about 5 KB). */
  readonly ingestBodyLimitBytes: number;
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
  /** How failed callbacks are retried (BullMQ attempts and exponential backoff) and how long jobs are kept. */
  readonly retry: RetryConfig;
  /** The outbox sweeper that enqueues deliveries whose enqueue after commit did not happen. */
  readonly sweeper: SweeperConfig;
  /** The reconciler that requeues pending deliveries whose job the queue lost. */
  readonly reconciler: ReconcilerConfig;
  /** The BullMQ worker of each delivery-worker process. */
  readonly worker: WorkerConfig;
  /** One callback attempt: its time limits and how much of the merchant's answer is kept. */
  readonly callback: CallbackConfig;
  /** ENQUEUE_TIMEOUT_MS: longest wait for Redis when adding jobs; what misses it stays for the sweeper. Default 2000. */
  readonly enqueueTimeoutMs: number;
  /** Who may open the Bull dashboard at /admin/queues (HTTP Basic). */
  readonly dashboard: DashboardConfig;
  /** The Prometheus `/metrics` endpoints of both services. */
  readonly metrics: MetricsConfig;
}

/** Where the services expose their Prometheus metrics, and who may read them. */
export interface MetricsConfig {
  /**
   * METRICS_PORT: port of each delivery-worker's own HTTP listener (`/metrics`, `/healthz`,
   * `/readyz`); 0 takes a free port, which the worker logs. The events-api serves `/metrics` on
   * PORT. Default 9464 (Prometheus's registered port for Node.js exporters).
   */
  readonly port: number;
  /**
   * METRICS_TOKEN: when set, `/metrics` on both services requires `Authorization: Bearer <token>`
   * (at least 16 characters); unset, `/metrics` is open, so set it wherever the events-api's port is
   * reachable from outside. Default: unset.
   */
  readonly token: string | undefined;
}

/** HTTP Basic credentials of the Bull dashboard: ops staff, not merchants. */
export interface DashboardConfig {
  /** DASHBOARD_USERNAME: 1 to 255 characters, no colon or control character (RFC 7617). Default `admin`. */
  readonly username: string;
  /**
   * DASHBOARD_PASSWORD. Required in production (at least 16 characters, not the development
   * default); elsewhere `dev-dashboard-password`.
   */
  readonly password: string;
}

/** Retry policy of callbacks: BullMQ's attempts with exponential backoff (delay x 2^(n-1)) and jitter. */
export interface RetryConfig {
  /** DELIVERY_ATTEMPTS: tries of a callback in all, the first included. Default 12. */
  readonly attempts: number;
  /** DELIVERY_BACKOFF_MS: wait before the first retry; each next one doubles. Default 30000. */
  readonly backoffDelayMs: number;
  /** DELIVERY_BACKOFF_JITTER: share of each wait drawn at random, 0 to 1. Default 0.2. */
  readonly backoffJitter: number;
  /** JOBS_KEEP_COMPLETED_SECONDS: how long delivered jobs stay in Redis (dashboard). Default 1 day. */
  readonly keepCompletedSeconds: number;
  /** JOBS_KEEP_FAILED_SECONDS: how long jobs that used every attempt stay for ops to retry. Default 14 days. */
  readonly keepFailedSeconds: number;
  /**
   * RETRY_AFTER_MAX_MS: longest wait a merchant's `Retry-After` (on 429 or 503) can impose before the
   * next try; a longer one is cut to this. Default 3600000 (1 hour).
   */
  readonly retryAfterMaxMs: number;
}

/** How each delivery-worker process runs its BullMQ worker. */
export interface WorkerConfig {
  /** WORKER_CONCURRENCY: callbacks one process sends at the same time. Default 16. */
  readonly concurrency: number;
  /**
   * WORKER_LOCK_DURATION_MS: how long a job stays locked to its worker without a renewal (renewed
   * every half of it while the process lives). A process that dies leaves its jobs locked this long
   * before another worker can take them again. Default 30000.
   */
  readonly lockDurationMs: number;
  /** WORKER_STALLED_INTERVAL_MS: how often a worker looks for jobs whose lock expired (their worker died). Default 30000. */
  readonly stalledIntervalMs: number;
}

/** Limits of one callback attempt. */
export interface CallbackConfig {
  /** CALLBACK_TIMEOUT_MS: longest one callback POST may take, from connecting to the last byte read. Default 10000. */
  readonly timeoutMs: number;
  /** CALLBACK_RESPONSE_MAX_BYTES: most bytes of the merchant's answer read and kept in the attempt log; the rest is not read. Default 4096. */
  readonly responseMaxBytes: number;
  /** OAUTH_TOKEN_TIMEOUT_MS: longest one OAuth token request may take. Default 10000. */
  readonly tokenTimeoutMs: number;
}

export interface SweeperConfig {
  /** SWEEPER_INTERVAL_MS: pause between sweeps. Default 5000. */
  readonly intervalMs: number;
  /** SWEEPER_GRACE_MS: deliveries younger than this are left to the events-api's own enqueue. Default 10000. */
  readonly graceMs: number;
  /** SWEEPER_BATCH_SIZE: most deliveries enqueued per sweep. Default 500. */
  readonly batchSize: number;
}

export interface ReconcilerConfig {
  /** RECONCILER_INTERVAL_MS: pause between passes. Default 60000. */
  readonly intervalMs: number;
  /**
   * RECONCILER_STALE_AFTER_MS: a pending delivery is checked once it was enqueued, and last found
   * alive in the queue, longer ago than this. Default 300000 (5 minutes).
   */
  readonly staleAfterMs: number;
  /** RECONCILER_BATCH_SIZE: most pending deliveries checked per pass. Default 500. */
  readonly batchSize: number;
}

/** Thrown when a variable is missing or malformed; the message names the variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'config_invalid';
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable}: ${problem}`);
  }
}

type Env = Readonly<Record<string, string | undefined>>;

const DEV_ADMIN_TOKEN = 'dev-admin-token';
const DEV_INGEST_TOKEN = 'dev-ingest-token';
const DEV_DASHBOARD_PASSWORD = 'dev-dashboard-password';
// A published key: good only for development and tests, refused in production.
const SECRETS_KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
const DEV_SECRETS_KEY = Buffer.from('herald-development-secrets-key!!', 'utf8');
const PRODUCTION_TOKEN_MIN_LENGTH = 32;
// A person types this one into a browser's login box, so it may be shorter than the bearer tokens.
const PRODUCTION_PASSWORD_MIN_LENGTH = 16;

// A scraper's credential, typed once into its configuration.
const METRICS_TOKEN_MIN_LENGTH = 16;

const NODE_ENVS = ['development', 'test', 'production'] as const;

export const DEFAULT_API_URL = 'http://127.0.0.1:3000';
export const DEFAULT_DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/herald';
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** Reads and validates the environment. Pure: pass an env object in tests. */
export function loadConfig(env: Env = process.env): Config {
  const nodeEnv = oneOf(env, 'NODE_ENV', NODE_ENVS, 'development');
  const production = nodeEnv === 'production';
  const secretsKeyId = text(env, 'SECRETS_KEY_ID', 'k1', SECRETS_KEY_ID);

  const config: Config = {
    nodeEnv,
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:'], DEFAULT_DATABASE_URL),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:'], DEFAULT_REDIS_URL),
    queuePrefix: text(env, 'QUEUE_PREFIX', 'herald', /^[A-Za-z0-9_.-]{1,64}$/),
    port: integer(env, 'PORT', 3000, 0, 65535),
    adminToken: token(env, 'ADMIN_TOKEN', DEV_ADMIN_TOKEN, production),
    ingestToken: token(env, 'INGEST_TOKEN', DEV_INGEST_TOKEN, production),
    secretsKey: secretsKey(env, production),
    secretsKeyId,
    secretsPreviousKeys: secretsPreviousKeys(env, secretsKeyId),
    logLevel: oneOf(env, 'LOG_LEVEL', ['error', 'warn', 'info', 'http', 'debug'] as const, nodeEnv === 'test' ? 'warn' : 'info'),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    readinessTimeoutMs: integer(env, 'READINESS_TIMEOUT_MS', 2_000, 50, 60_000),
    rateLimitRequests: integer(env, 'RATE_LIMIT_REQUESTS', 100, 1, 1_000_000),
    rateLimitWindowSeconds: integer(env, 'RATE_LIMIT_WINDOW_SECONDS', 1, 1, 3_600),
    apiKeyCacheMs: integer(env, 'API_KEY_CACHE_MS', 5_000, 0, 60_000),
    ingestBodyLimitBytes: integer(env, 'INGEST_BODY_LIMIT_BYTES', 5 * 1024 * 1024, 1_024, 100 * 1024 * 1024),
    allowPrivateTargets: boolean(env, 'ALLOW_PRIVATE_TARGETS', !production),
    targetHostAllowlist: hostList(env, 'TARGET_HOST_ALLOWLIST'),
    retry: {
      attempts: integer(env, 'DELIVERY_ATTEMPTS', 12, 1, 100),
      backoffDelayMs: integer(env, 'DELIVERY_BACKOFF_MS', 30_000, 1, 86_400_000),
      backoffJitter: fraction(env, 'DELIVERY_BACKOFF_JITTER', 0.2),
      keepCompletedSeconds: integer(env, 'JOBS_KEEP_COMPLETED_SECONDS', 86_400, 0, 31_536_000),
      keepFailedSeconds: integer(env, 'JOBS_KEEP_FAILED_SECONDS', 14 * 86_400, 0, 31_536_000),
      retryAfterMaxMs: integer(env, 'RETRY_AFTER_MAX_MS', 3_600_000, 0, 86_400_000),
    },
    enqueueTimeoutMs: integer(env, 'ENQUEUE_TIMEOUT_MS', 2_000, 50, 60_000),
    sweeper: {
      intervalMs: integer(env, 'SWEEPER_INTERVAL_MS', 5_000, 100, 3_600_000),
      graceMs: integer(env, 'SWEEPER_GRACE_MS', 10_000, 0, 3_600_000),
      batchSize: integer(env, 'SWEEPER_BATCH_SIZE', 500, 1, 10_000),
    },
    reconciler: {
      intervalMs: integer(env, 'RECONCILER_INTERVAL_MS', 60_000, 100, 3_600_000),
      staleAfterMs: integer(env, 'RECONCILER_STALE_AFTER_MS', 300_000, 0, 86_400_000),
      batchSize: integer(env, 'RECONCILER_BATCH_SIZE', 500, 1, 10_000),
    },
    worker: {
      concurrency: integer(env, 'WORKER_CONCURRENCY', 16, 1, 1_000),
      lockDurationMs: integer(env, 'WORKER_LOCK_DURATION_MS', 30_000, 1_000, 3_600_000),
      stalledIntervalMs: integer(env, 'WORKER_STALLED_INTERVAL_MS', 30_000, 500, 3_600_000),
    },
    callback: {
      timeoutMs: integer(env, 'CALLBACK_TIMEOUT_MS', 10_000, 10, 600_000),
      responseMaxBytes: integer(env, 'CALLBACK_RESPONSE_MAX_BYTES', 4_096, 0, 1_048_576),
      tokenTimeoutMs: integer(env, 'OAUTH_TOKEN_TIMEOUT_MS', 10_000, 10, 600_000),
    },
    dashboard: {
      // RFC 7617: the user-id may hold neither a colon (the receiver splits there) nor a control character.
      username: text(env, 'DASHBOARD_USERNAME', 'admin', /^[^:\u0000-\u001f\u007f]{1,255}$/),
      password: token(env, 'DASHBOARD_PASSWORD', DEV_DASHBOARD_PASSWORD, production, PRODUCTION_PASSWORD_MIN_LENGTH),
    },
    metrics: {
      port: integer(env, 'METRICS_PORT', 9464, 0, 65535),
      token: optionalSecret(env, 'METRICS_TOKEN', METRICS_TOKEN_MIN_LENGTH),
    },
  };
  return Object.freeze(config);
}

function raw(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${value}"`);
  }
  return value as T;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new ConfigError(name, `must be a whole number, got "${value}"`);
  const parsed = Number(value);
  if (parsed < min || parsed > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${parsed}`);
  return parsed;
}

function fraction(env: Env, name: string, fallback: number): number {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!/^\d*\.?\d+$/.test(value) || parsed > 1) throw new ConfigError(name, `must be a number from 0 to 1, got "${value}"`);
  return parsed;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  if (value !== 'true' && value !== 'false') throw new ConfigError(name, `must be true or false, got "${value}"`);
  return value === 'true';
}

// A DNS name (letters, digits, hyphens, dots) or an IP address; IPv6 without brackets.
const HOST = /^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

function hostList(env: Env, name: string): readonly string[] {
  const value = raw(env, name);
  if (value === undefined) return Object.freeze([]);
  const hosts = value.split(',').map((host) => host.trim().toLowerCase()).filter((host) => host !== '');
  for (const host of hosts) {
    if (!HOST.test(host) && isIP(host) === 0) throw new ConfigError(name, `"${host}" is not a host name or IP address`);
  }
  // A trailing dot names the same host; store the form URLs are compared in.
  return Object.freeze(hosts.map((host) => host.replace(/\.$/, '')));
}

function text(env: Env, name: string, fallback: string, pattern: RegExp): string {
  const value = raw(env, name) ?? fallback;
  if (!pattern.test(value)) throw new ConfigError(name, `must match ${pattern}`);
  return value;
}

function url(env: Env, name: string, protocols: string[], fallback: string): string {
  const value = raw(env, name) ?? fallback;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(name, 'is not a valid URL');
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.map((p) => `${p}//`).join(' or ')}`);
  }
  return value;
}

function token(env: Env, name: string, devDefault: string, production: boolean, minLength = PRODUCTION_TOKEN_MIN_LENGTH): string {
  const value = raw(env, name);
  if (!production) return value ?? devDefault;
  if (value === undefined) throw new ConfigError(name, 'is required when NODE_ENV=production');
  if (value === devDefault) throw new ConfigError(name, 'must not be the development default in production');
  if (value.length < minLength) {
    throw new ConfigError(name, `must be at least ${minLength} characters in production`);
  }
  return value;
}

function optionalSecret(env: Env, name: string, minLength: number): string | undefined {
  const value = raw(env, name);
  if (value === undefined) return undefined;
  if (value.length < minLength) throw new ConfigError(name, `must be at least ${minLength} characters`);
  // Sent in an HTTP header: a control character or a space would not survive the trip.
  if (!/^[\x21-\x7e]+$/.test(value)) throw new ConfigError(name, 'must be printable ASCII without spaces');
  return value;
}

function secretsKey(env: Env, production: boolean): Buffer {
  const name = 'SECRETS_KEY';
  const value = raw(env, name);
  if (value === undefined) {
    if (production) throw new ConfigError(name, 'is required when NODE_ENV=production');
    return DEV_SECRETS_KEY;
  }
  const key = parseSecretsKey(name, value);
  if (production && key.equals(DEV_SECRETS_KEY)) {
    throw new ConfigError(name, 'must not be the development key in production');
  }
  return key;
}

/** A 32-byte key written as 64 hex characters or as base64; `name` is for the error message. */
function parseSecretsKey(name: string, value: string): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
  // Buffer.from(..., 'base64') ignores bad characters, so check the round trip as well as the length.
  const isBase64 = key.toString('base64').replace(/=+$/, '') === value.replace(/=+$/, '');
  if (key.length !== 32 || (!/^[0-9a-fA-F]{64}$/.test(value) && !isBase64)) {
    throw new ConfigError(name, 'must be 32 bytes, written as 64 hex characters or as base64');
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
    keys[id] = parseSecretsKey(`${name} (key id ${id})`, pair.slice(separator + 1).trim());
  }
  return Object.freeze(keys);
}

/** TEST_DATABASE_URL: the database the test suites use (never the one the system runs on). */
export function testDatabaseUrl(env: Env = process.env): string {
  return url(env, 'TEST_DATABASE_URL', ['postgres:', 'postgresql:'], 'postgresql://postgres@127.0.0.1:5432/herald_test');
}

/** What the `herald` support CLI needs: where the events-api is, and the admin token. */
export interface CliConfig {
  /** HERALD_API_URL: base URL (http or https) of the events-api the CLI calls. Default `http://127.0.0.1:3000`. */
  readonly apiUrl: string;
  /** ADMIN_TOKEN, under the same rules as the events-api's (required, and not the default, in production). */
  readonly adminToken: string;
}

/**
 * Reads only the CLI's variables: a client needs neither the database nor the secrets key, so it
 * must not require them as `loadConfig` does under NODE_ENV=production.
 */
export function loadCliConfig(env: Env = process.env): CliConfig {
  const production = oneOf(env, 'NODE_ENV', NODE_ENVS, 'development') === 'production';
  return Object.freeze({
    apiUrl: url(env, 'HERALD_API_URL', ['http:', 'https:'], DEFAULT_API_URL),
    adminToken: token(env, 'ADMIN_TOKEN', DEV_ADMIN_TOKEN, production),
  });
}
