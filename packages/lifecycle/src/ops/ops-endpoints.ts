import { checkReadiness, type ReadinessCheck } from '../readiness';
import type { FailedAuthThrottle } from '../auth/failed-auth-throttle';
import { bearerGuard } from './bearer';
import { jsonResponse, type PlainHandler } from './plain-http';
import { problemResponse, problemType } from './problem';

/** Where the Prometheus text comes from: `HeraldMetrics`, typed structurally so this package needs no prom-client. */
export interface MetricsSource {
  /** Content-Type of `exposition()`. */
  readonly contentType: string;
  exposition(): Promise<string>;
}

/** What the ops endpoints of a service need. */
export interface OpsEndpointsOptions {
  /** What /readyz checks (PostgreSQL and Redis). */
  checks: readonly ReadinessCheck[];
  /** READINESS_TIMEOUT_MS: how long /readyz waits for each check. */
  readinessTimeoutMs: number;
  /** What /metrics serves. */
  metrics: MetricsSource;
  /** METRICS_TOKEN: when set, /metrics requires `Authorization: Bearer <token>`; open otherwise (no series holds a secret or a tenant's id). */
  token: string | undefined;
  /**
   * The process's failed-authentication throttle (AUTH_FAILURES_*): a wrong token counts against
   * the client's address, and an address past its failures gets 429 with Retry-After, so the
   * token cannot be guessed at the speed of the listener. The process's one table, shared with its
   * other credentials.
   */
  failedAuth: FailedAuthThrottle;
}

/** The realm of the /metrics bearer challenge. */
const METRICS_REALM = 'herald-metrics';

/**
 * The GET endpoints both services serve for operators, by path:
 * - /healthz: the process is up (for a liveness probe; never touches a dependency);
 * - /readyz: every dependency answers within the timeout; 503 problem+json names those that do not;
 * - /metrics: the Prometheus text, behind the optional bearer token and the failed-authentication throttle.
 */
export function opsEndpoints(options: OpsEndpointsOptions): ReadonlyMap<string, PlainHandler> {
  const guard = options.token === undefined ? () => undefined : bearerGuard(options.token, METRICS_REALM, options.failedAuth);
  return new Map<string, PlainHandler>([
    ['/healthz', async () => jsonResponse(200, { status: 'ok' })],
    [
      '/readyz',
      async () => {
        const { ready, checks, down } = await checkReadiness(options.checks, options.readinessTimeoutMs);
        if (ready) return jsonResponse(200, { status: 'ready', checks });
        return problemResponse({
          type: problemType('not_ready'),
          title: 'Service Unavailable',
          status: 503,
          detail: `Not ready: ${down.join(', ')} did not answer.`,
          down,
          checks,
        });
      },
    ],
    [
      '/metrics',
      async (request) => {
        const refused = guard(request);
        if (refused) return refused;
        return { status: 200, headers: { 'Content-Type': options.metrics.contentType }, body: await options.metrics.exposition() };
      },
    ],
  ]);
}
