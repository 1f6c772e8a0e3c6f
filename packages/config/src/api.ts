/** The events-api's settings: the shared ones, its port, its bearer tokens, its limits and the dashboard login. */
import { readTracing, type TracingConfig } from './tracing';
import { ConfigError } from './config-error';
import { addressList, integer, requireDistinct, text, token, url, type Env } from './parsers';
import { readEventsListLimits, readQueryClasses, type EventsListLimits, type QueryClassesConfig } from './query-limits';
import {
  readAuthFailures,
  readCallback,
  readDeliveryDefaults,
  readDeliveryJobs,
  readHost,
  readMetrics,
  readServiceConfig,
  readTargetAutoDisableAfterMs,
  type AuthFailuresConfig,
  type CallbackConfig,
  type DeliveryDefaultsConfig,
  type DeliveryJobsConfig,
  type MetricsConfig,
  type ServiceConfig,
} from './shared';

/** The events-api's secrets outside production, public by design (production refuses them). */
export const DEVELOPMENT_SECRETS = Object.freeze({
  adminToken: 'dev-admin-token',
  ingestToken: 'dev-ingest-token',
  dashboardPassword: 'dev-dashboard-password',
});
const { adminToken: DEV_ADMIN_TOKEN, ingestToken: DEV_INGEST_TOKEN, dashboardPassword: DEV_DASHBOARD_PASSWORD } = DEVELOPMENT_SECRETS;
// A person types this one into a browser's login box, so it may be shorter than the bearer tokens.
const PRODUCTION_PASSWORD_MIN_LENGTH = 16;

export interface ApiConfig extends ServiceConfig {
  /** PORT of the events-api. Default 3000. */
  readonly port: number;
  /**
   * HOST: the address the events-api listens on. Default `127.0.0.1` outside production (the
   * development tokens must not be usable from the network); in production every interface when
   * unset (undefined).
   */
  readonly host: string | undefined;
  /**
   * PUBLIC_URL: the events-api's base URL as its clients reach it (`https://herald.example.com`),
   * given as `servers` in the OpenAPI documents. Unset (undefined): the origin each request for a
   * document reached, which reads `http` behind a TLS-terminating proxy.
   */
  readonly publicUrl: string | undefined;
  /**
   * EGRESS_ADDRESSES: the addresses callbacks leave from, as the operator knows them (IP addresses
   * or CIDR ranges, comma-separated), shown to merchants so that a target without authentication
   * can allow-list them, as the spec asks. Herald does not check them: it cannot see its own egress
   * behind NAT. Default: none.
   */
  readonly egressAddresses: readonly string[];
  /** ADMIN_TOKEN: bearer token of the admin API. Required in production (at least 32 characters). */
  readonly adminToken: string;
  /** INGEST_TOKEN: bearer token of the internal ingest endpoint. Required in production (at least 32 characters). */
  readonly ingestToken: string;
  /** RATE_LIMIT_REQUESTS: GET /events requests allowed per API key in each window. Default 100. */
  readonly rateLimitRequests: number;
  /** RATE_LIMIT_WINDOW_SECONDS: length of the rate limit window. Default 1. */
  readonly rateLimitWindowSeconds: number;
  /**
   * RATE_LIMIT_SYNC_MS: each events-api process counts the limit in memory and adds its counts to
   * Redis (reading back every process's totals) this often, so no request waits on Redis. Between
   * two syncs a key may get up to what the other processes admitted in that time beyond the limit
   * (never more than the number of processes x the limit). 10 to 10000, at most the window. Default 100.
   */
  readonly rateLimitSyncMs: number;
  /**
   * API_KEY_CACHE_MS: how long each events-api process remembers what an x-api-key authenticates as
   * (or that it is unknown), so GET /events skips that query. A key revoked through another process,
   * or in the database directly, is refused at the latest this long after; the process that
   * revokes it forgets at once. 0 turns the cache off. Default 5000.
   */
  readonly apiKeyCacheMs: number;
  /** API_KEY_CACHE_MAX_ENTRIES: most x-api-key answers one process remembers; the oldest go first. 1 to 1000000. Default 10000. */
  readonly apiKeyCacheMaxEntries: number;
  /**
   * API_KEY_CACHE_MAX_BYTES: most memory those answers may take, counted as each key's length plus
   * a fixed allowance per answer; the oldest go first. 65536 to 1073741824. Default 8 MiB.
   */
  readonly apiKeyCacheMaxBytes: number;
  /**
   * UNKNOWN_API_KEYS_PER_SECOND: lookups in PostgreSQL of keys whose prefix no key in use has (made
   * up, or made by another process in the last API_KEY_CACHE_MS), per second and process; past it
   * they are refused with 429 for the rest of that second, so a flood of made-up keys cannot load
   * the database. Keys in use are never affected. 1 to 100000. Default 50.
   */
  readonly unknownApiKeysPerSecond: number;
  /** UNKNOWN_API_KEYS_PER_ADDRESS: of those lookups, how many one client address may cause per second. 1 to 100000. Default 5. */
  readonly unknownApiKeysPerAddress: number;
  /**
   * UNKNOWN_API_KEYS_PER_PREFIX: lookups that find no key, per second, among keys sharing the prefix
   * of a key in use (a guess that knows a prefix); past it that prefix alone gets 429. 1 to 100000. Default 5.
   */
  readonly unknownApiKeysPerPrefix: number;
  /** How failed authentications from one client address are slowed down (every credential of the API, METRICS_TOKEN included: one table). */
  readonly authFailures: AuthFailuresConfig;
  /** INGEST_BODY_LIMIT_BYTES: largest ingest request body. Default 5 MiB (1,000 events of about 5 KB). */
  readonly ingestBodyLimitBytes: number;
  /**
   * EVENT_MAX_BYTES: largest event, as its callback body (the event's JSON as GET /events shows it),
   * in UTF-8 bytes; a larger one is refused at ingest, since merchants' receivers cap bodies (often
   * at 100 kB to 1 MB) and would answer every retry with 413. 1024 to 104857600. Default 262144 (256 KiB).
   */
  readonly eventMaxBytes: number;
  /**
   * SIGNING_SECRET_ROTATION_GRACE_SECONDS: after a target's signing secret is rotated, how long
   * callbacks also carry the replaced secret's signature, so that the merchant can switch to the
   * new secret without refusing a callback. 0 to 2592000 (30 days). Default 86400 (1 day).
   */
  readonly signingSecretRotationGraceSeconds: number;
  /**
   * REPLAY_MAX_DAYS: the longest time range (createdFrom to createdTo) a bulk replay may take when
   * no program, merchant, event or target scopes it. 1 to 3660. Default 31.
   */
  readonly replayMaxDays: number;
  /** How far back, and how much at once, a merchant may recover (POST /deliveries/recover). */
  readonly recovery: RecoveryConfig;
  /** TARGET_AUTO_DISABLE_AFTER (see readTargetAutoDisableAfterMs): GET /notification-target shows when it would switch the target off. */
  readonly targetAutoDisableAfterMs: number;
  /** The attempts and retention of the delivery jobs the API enqueues (the worker owns the backoff). */
  readonly retry: DeliveryJobsConfig;
  /** The global defaults of targets' delivery policies, shown with each target's own values. */
  readonly deliveryDefaults: DeliveryDefaultsConfig;
  /** Who may open the Bull dashboard at /admin/queues (HTTP Basic). */
  readonly dashboard: DashboardConfig;
  /** The merchant portal at /portal: its links' and sessions' lifetimes and its cookie. */
  readonly portal: PortalConfig;
  /** `/metrics`, served on PORT. */
  readonly metrics: MetricsConfig;
  /** OpenTelemetry tracing (OTEL_*); undefined when off, the default. */
  readonly tracing: TracingConfig | undefined;
  /** How long the HTTP server waits for slow clients, and how many it holds at once. */
  readonly http: HttpServerConfig;
  /** The connection pool and statement time limit of each class of queries. */
  readonly queryClasses: QueryClassesConfig;
  /** The work one GET /events may cause, and how many of one key's run at once. */
  readonly eventsList: EventsListLimits;
  /**
   * The limits of the requests the API sends to merchants, as the worker's: the token request that
   * checks an OAuth target's credentials when it is saved, and test callbacks.
   */
  readonly callback: CallbackConfig;
}

/**
 * The HTTP server's own limits, below any route: a client that sends slowly, or many clients that
 * connect and wait, are dropped within these instead of holding sockets and memory for minutes.
 */
export interface HttpServerConfig {
  /**
   * HTTP_HEADERS_TIMEOUT_MS: longest time from a request's first byte to its last header line;
   * a slower client gets a 408 and is disconnected. 100 to 600000, at most HTTP_REQUEST_TIMEOUT_MS. Default 10000.
   */
  readonly headersTimeoutMs: number;
  /**
   * HTTP_REQUEST_TIMEOUT_MS: longest time to receive a whole request, body included (the largest
   * ingest body must fit in it on the slowest legitimate link); a slower client gets a 408 and is
   * disconnected. 100 to 3600000. Default 30000.
   */
  readonly requestTimeoutMs: number;
  /**
   * HTTP_KEEP_ALIVE_TIMEOUT_MS: how long an idle keep-alive connection stays open for the next
   * request. Behind a load balancer, keep it above the balancer's idle timeout. 100 to 600000. Default 5000.
   */
  readonly keepAliveTimeoutMs: number;
  /**
   * HTTP_MAX_CONNECTIONS: open connections one process holds at once. At the cap a new connection
   * takes the place of the one idle longest (still sending its headers, or an idle keep-alive); it
   * is closed on arrival only when every connection has a request being answered. 1 to 1000000. Default 1000.
   */
  readonly maxConnections: number;
  /**
   * HTTP_MAX_CONNECTIONS_PER_ADDRESS: open connections one client address (an IPv6 /64) holds at
   * once; more are closed on arrival. The address is the TCP peer's: behind a load balancer or proxy
   * that connects from a few addresses, raise it to HTTP_MAX_CONNECTIONS. 1 to 1000000. Default 100.
   */
  readonly maxConnectionsPerAddress: number;
}

/** A merchant's recovery of the callbacks its target missed (POST /deliveries/recover). */
export interface RecoveryConfig {
  /**
   * RECOVERY_MAX_DAYS: how far back a recovery's window may start (its `from`), in days, counted
   * from the request; only events Herald stored within it are recovered. Keep it below
   * DELIVERY_RETENTION_DAYS and, when set, EVENT_RETENTION_DAYS (the delivery-worker's), so that
   * the weeks and months a recovery writes into are never being dropped. 1 to 365. Default 7.
   */
  readonly maxDays: number;
  /**
   * RECOVERY_MAX_DELIVERIES: most callbacks one recovery queues, so that one request holds its
   * transaction briefly; a larger window is recovered up to `coveredTo`, and the next recovery
   * takes the rest. It reads at most 10 times as many events the target's filters refuse.
   * 1 to 10000. Default 1000.
   */
  readonly maxDeliveries: number;
}

/** HTTP Basic credentials of the Bull dashboard: ops staff, not merchants. */
/** The merchant portal (services/events-api/src/portal). */
export interface PortalConfig {
  /** PORTAL_LINK_TTL_SECONDS: how long a portal link support creates may be opened (once). 60 to 604800. Default 900 (15 minutes). */
  readonly linkTtlSeconds: number;
  /** PORTAL_SESSION_TTL_SECONDS: how long a portal session lasts from the link's opening; no renewal. 60 to 86400. Default 3600 (1 hour). */
  readonly sessionTtlSeconds: number;
  /** Whether the session cookie is `Secure` (sent over HTTPS only): everywhere but NODE_ENV=development. */
  readonly secureCookie: boolean;
}

export interface DashboardConfig {
  /** DASHBOARD_USERNAME: 1 to 255 characters, no colon or control character (RFC 7617). Default `admin`. */
  readonly username: string;
  /**
   * DASHBOARD_PASSWORD. Required in production (at least 16 characters, not the development
   * default); elsewhere `dev-dashboard-password`.
   */
  readonly password: string;
}

/**
 * Reads and validates the events-api's environment into a frozen object; worker-only settings
 * are neither read nor required. Pure: pass an env object in tests.
 */
export function loadApiConfig(env: Env = process.env): ApiConfig {
  const service = readServiceConfig(env);
  const production = service.nodeEnv === 'production';
  const adminToken = readAdminToken(env, production);
  const ingestToken = readIngestToken(env, production);
  const dashboardPassword = token(env, 'DASHBOARD_PASSWORD', DEV_DASHBOARD_PASSWORD, production, {
    minLength: PRODUCTION_PASSWORD_MIN_LENGTH,
    // Sent base64-encoded in HTTP Basic, so a space is fine (a pass phrase).
    headerSafe: false,
  });
  requireDistinct(production, [
    ['ADMIN_TOKEN', adminToken],
    ['INGEST_TOKEN', ingestToken],
    ['DASHBOARD_PASSWORD', dashboardPassword],
  ]);
  const rateLimitWindowSeconds = integer(env, 'RATE_LIMIT_WINDOW_SECONDS', 1, 1, 3_600);
  return Object.freeze({
    ...service,
    port: readPort(env),
    host: readHost(env, service.nodeEnv),
    publicUrl: readPublicUrl(env),
    egressAddresses: addressList(env, 'EGRESS_ADDRESSES'),
    adminToken,
    ingestToken,
    rateLimitRequests: integer(env, 'RATE_LIMIT_REQUESTS', 100, 1, 1_000_000),
    rateLimitWindowSeconds,
    rateLimitSyncMs: readRateLimitSyncMs(env, rateLimitWindowSeconds),
    apiKeyCacheMs: integer(env, 'API_KEY_CACHE_MS', 5_000, 0, 60_000),
    apiKeyCacheMaxEntries: integer(env, 'API_KEY_CACHE_MAX_ENTRIES', 10_000, 1, 1_000_000),
    apiKeyCacheMaxBytes: integer(env, 'API_KEY_CACHE_MAX_BYTES', 8 * 1024 * 1024, 65_536, 1024 * 1024 * 1024),
    unknownApiKeysPerSecond: integer(env, 'UNKNOWN_API_KEYS_PER_SECOND', 50, 1, 100_000),
    unknownApiKeysPerAddress: integer(env, 'UNKNOWN_API_KEYS_PER_ADDRESS', 5, 1, 100_000),
    unknownApiKeysPerPrefix: integer(env, 'UNKNOWN_API_KEYS_PER_PREFIX', 5, 1, 100_000),
    authFailures: Object.freeze(readAuthFailures(env)),
    ingestBodyLimitBytes: integer(env, 'INGEST_BODY_LIMIT_BYTES', 5 * 1024 * 1024, 1_024, 100 * 1024 * 1024),
    eventMaxBytes: integer(env, 'EVENT_MAX_BYTES', 256 * 1024, 1_024, 100 * 1024 * 1024),
    signingSecretRotationGraceSeconds: integer(env, 'SIGNING_SECRET_ROTATION_GRACE_SECONDS', 86_400, 0, 30 * 86_400),
    replayMaxDays: integer(env, 'REPLAY_MAX_DAYS', 31, 1, 3_660),
    recovery: Object.freeze({
      maxDays: integer(env, 'RECOVERY_MAX_DAYS', 7, 1, 365),
      maxDeliveries: integer(env, 'RECOVERY_MAX_DELIVERIES', 1_000, 1, 10_000),
    }),
    targetAutoDisableAfterMs: readTargetAutoDisableAfterMs(env),
    retry: Object.freeze(readDeliveryJobs(env)),
    deliveryDefaults: readDeliveryDefaults(env),
    dashboard: Object.freeze({
      // RFC 7617: the user-id may hold neither a colon (the receiver splits there) nor a control character.
      // biome-ignore lint/suspicious/noControlCharactersInRegex: refuses control characters in the Basic auth user-id on purpose (RFC 7617)
      username: text(env, 'DASHBOARD_USERNAME', 'admin', /^[^:\u0000-\u001f\u007f]{1,255}$/),
      password: dashboardPassword,
    }),
    portal: Object.freeze({
      linkTtlSeconds: integer(env, 'PORTAL_LINK_TTL_SECONDS', 900, 60, 7 * 86_400),
      sessionTtlSeconds: integer(env, 'PORTAL_SESSION_TTL_SECONDS', 3_600, 60, 86_400),
      // Plain http is only for a developer's own machine; a test is as strict as production.
      secureCookie: service.nodeEnv !== 'development',
    }),
    metrics: Object.freeze(readMetrics(env)),
    tracing: readTracing(env, 'herald-events-api'),
    http: Object.freeze(readHttpServer(env)),
    ...readQueryBounds(env),
    callback: Object.freeze(readCallback(env)),
  });
}

function readRateLimitSyncMs(env: Env, windowSeconds: number): number {
  const syncMs = integer(env, 'RATE_LIMIT_SYNC_MS', Math.min(100, windowSeconds * 1000), 10, 10_000);
  // A sync slower than the window would never share a count within the window it belongs to.
  if (syncMs > windowSeconds * 1000) {
    throw new ConfigError(
      'RATE_LIMIT_SYNC_MS',
      `must be at most the rate limit window (RATE_LIMIT_WINDOW_SECONDS = ${windowSeconds}, ${windowSeconds * 1000} ms), got ${syncMs}`,
    );
  }
  return syncMs;
}

// --- Query bounds (tenant isolation) ---
function readQueryBounds(env: Env): Pick<ApiConfig, 'queryClasses' | 'eventsList'> {
  const queryClasses = readQueryClasses(env);
  return {
    queryClasses: Object.freeze({
      merchantReads: Object.freeze(queryClasses.merchantReads),
      ingest: Object.freeze(queryClasses.ingest),
      admin: Object.freeze(queryClasses.admin),
    }),
    eventsList: Object.freeze(readEventsListLimits(env, queryClasses.merchantReads.poolSize)),
  };
}

function readHttpServer(env: Env): HttpServerConfig {
  const requestTimeoutMs = integer(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000);
  const headersTimeoutMs = integer(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000);
  // The headers are part of the request: a longer headers timeout could never apply (Node refuses it).
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError('HTTP_HEADERS_TIMEOUT_MS', `must not exceed HTTP_REQUEST_TIMEOUT_MS (${requestTimeoutMs}), got ${headersTimeoutMs}`);
  }
  return {
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: integer(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 5_000, 100, 600_000),
    maxConnections: integer(env, 'HTTP_MAX_CONNECTIONS', 1_000, 1, 1_000_000),
    maxConnectionsPerAddress: integer(env, 'HTTP_MAX_CONNECTIONS_PER_ADDRESS', 100, 1, 1_000_000),
  };
}

/** ADMIN_TOKEN: the events-api checks it, the `herald` CLI sends it; one rule for both. */
export function readAdminToken(env: Env, production: boolean): string {
  return token(env, 'ADMIN_TOKEN', DEV_ADMIN_TOKEN, production);
}

/** INGEST_TOKEN: the events-api checks it, `pnpm demo` sends it. */
export function readIngestToken(env: Env, production: boolean): string {
  return token(env, 'INGEST_TOKEN', DEV_INGEST_TOKEN, production);
}

/** PORT: the events-api listens on it, and the `herald` CLI calls it on 127.0.0.1 unless HERALD_API_URL says otherwise. */
/** PUBLIC_URL: an absolute http(s) URL with nothing after the origin but an optional path prefix; unset, undefined. */
function readPublicUrl(env: Env): string | undefined {
  if (env['PUBLIC_URL'] === undefined || env['PUBLIC_URL'] === '') return undefined;
  const value = url(env, 'PUBLIC_URL', ['http:', 'https:'], '');
  const parsed = new URL(value);
  if (parsed.username || parsed.password || parsed.search || parsed.hash) {
    throw new ConfigError('PUBLIC_URL', 'must be a base URL without user info, query or fragment, e.g. https://herald.example.com');
  }
  // Without a trailing slash: generated clients append paths that begin with one.
  return value.replace(/\/+$/, '');
}

export function readPort(env: Env): number {
  return integer(env, 'PORT', 3000, 0, 65535);
}
