/** The events-api's settings: the shared ones, its port, its bearer tokens, its limits and the dashboard login. */
import { ConfigError } from './config-error';
import { integer, requireDistinct, text, token, type Env } from './parsers';
import { readCallback, readDeliveryJobs, readMetrics, readServiceConfig, type CallbackConfig, type DeliveryJobsConfig, type MetricsConfig, type ServiceConfig } from './shared';

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
  /** ADMIN_TOKEN: bearer token of the admin API. Required in production (at least 32 characters). */
  readonly adminToken: string;
  /** INGEST_TOKEN: bearer token of the internal ingest endpoint. Required in production (at least 32 characters). */
  readonly ingestToken: string;
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
  /** The attempts and retention of the delivery jobs the API enqueues (the worker owns the backoff). */
  readonly retry: DeliveryJobsConfig;
  /** Who may open the Bull dashboard at /admin/queues (HTTP Basic). */
  readonly dashboard: DashboardConfig;
  /** `/metrics`, served on PORT. */
  readonly metrics: MetricsConfig;
  /** How long the HTTP server waits for slow clients, and how many it holds at once. */
  readonly http: HttpServerConfig;
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
  /** HTTP_MAX_CONNECTIONS: open connections one process holds at once; more are closed on arrival. 1 to 1000000. Default 1000. */
  readonly maxConnections: number;
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

/**
 * Reads and validates the events-api's environment into a frozen object; worker-only settings
 * are neither read nor required. Pure: pass an env object in tests.
 */
export function loadApiConfig(env: Env = process.env): ApiConfig {
  const service = readServiceConfig(env);
  const production = service.nodeEnv === 'production';
  const adminToken = readAdminToken(env, production);
  const ingestToken = token(env, 'INGEST_TOKEN', DEV_INGEST_TOKEN, production);
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
  return Object.freeze({
    ...service,
    port: readPort(env),
    adminToken,
    ingestToken,
    rateLimitRequests: integer(env, 'RATE_LIMIT_REQUESTS', 100, 1, 1_000_000),
    rateLimitWindowSeconds: integer(env, 'RATE_LIMIT_WINDOW_SECONDS', 1, 1, 3_600),
    apiKeyCacheMs: integer(env, 'API_KEY_CACHE_MS', 5_000, 0, 60_000),
    ingestBodyLimitBytes: integer(env, 'INGEST_BODY_LIMIT_BYTES', 5 * 1024 * 1024, 1_024, 100 * 1024 * 1024),
    retry: Object.freeze(readDeliveryJobs(env)),
    dashboard: Object.freeze({
      // RFC 7617: the user-id may hold neither a colon (the receiver splits there) nor a control character.
      username: text(env, 'DASHBOARD_USERNAME', 'admin', /^[^:\u0000-\u001f\u007f]{1,255}$/),
      password: dashboardPassword,
    }),
    metrics: Object.freeze(readMetrics(env)),
    http: Object.freeze(readHttpServer(env)),
    callback: Object.freeze(readCallback(env)),
  });
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
  };
}

/** ADMIN_TOKEN: the events-api checks it, the `herald` CLI sends it; one rule for both. */
export function readAdminToken(env: Env, production: boolean): string {
  return token(env, 'ADMIN_TOKEN', DEV_ADMIN_TOKEN, production);
}

/** PORT: the events-api listens on it, and the `herald` CLI calls it on 127.0.0.1 unless HERALD_API_URL says otherwise. */
export function readPort(env: Env): number {
  return integer(env, 'PORT', 3000, 0, 65535);
}
