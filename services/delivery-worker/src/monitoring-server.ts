import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkReadiness, type ReadinessCheck } from '@herald/lifecycle';
import type { HeraldMetrics } from '@herald/metrics';

export interface MonitoringServerOptions {
  /** METRICS_PORT; 0 takes a free port (see `MonitoringServer.port`). */
  port: number;
  /** Host to listen on. Default: every interface, so a scraper on another machine reaches it. */
  host?: string;
  metrics: Pick<HeraldMetrics, 'exposition' | 'contentType'>;
  /** What /readyz checks (PostgreSQL and Redis). */
  checks: readonly ReadinessCheck[];
  /** READINESS_TIMEOUT_MS. */
  readinessTimeoutMs: number;
  /** METRICS_TOKEN: when set, /metrics requires `Authorization: Bearer <token>`. */
  token: string | undefined;
}

export interface MonitoringServer {
  /** The port listened on (the one chosen when METRICS_PORT is 0). */
  readonly port: number;
  /** Stops listening and drops idle keep-alive connections. */
  close(): Promise<void>;
}

/**
 * The delivery-worker's own small HTTP listener: GET /metrics (Prometheus), /healthz (the process is
 * up) and /readyz (PostgreSQL and Redis answer; 503 problem+json naming those that do not), with the
 * same bodies as the events-api's. Anything else is 404.
 */
export async function startMonitoringServer(options: MonitoringServerOptions): Promise<MonitoringServer> {
  const authorized = bearerMatcher(options.token);
  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) sendProblem(res, 500, 'internal', 'Internal Server Error');
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return sendProblem(res, 405, 'method_not_allowed', 'Method Not Allowed', { Allow: 'GET, HEAD' });
    if (path === '/healthz') return sendJson(res, 200, { status: 'ok' });
    if (path === '/readyz') {
      const { ready, checks, down } = await checkReadiness(options.checks, options.readinessTimeoutMs);
      if (ready) return sendJson(res, 200, { status: 'ready', checks });
      return sendProblem(res, 503, 'not_ready', 'Service Unavailable', {}, { detail: `Not ready: ${down.join(', ')} did not answer.`, down, checks });
    }
    if (path === '/metrics') {
      if (!authorized(req.headers.authorization)) {
        return sendProblem(res, 401, 'unauthorized', 'Unauthorized', { 'WWW-Authenticate': 'Bearer realm="herald-metrics"' });
      }
      const body = await options.metrics.exposition();
      res.writeHead(200, { 'Content-Type': options.metrics.contentType }).end(body);
      return;
    }
    sendProblem(res, 404, 'not_found', 'Not Found');
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      const closed = new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
      server.closeIdleConnections();
      await closed;
    },
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown, contentType = 'application/json; charset=utf-8', headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...headers, 'Content-Type': contentType }).end(JSON.stringify(body));
}

/** An RFC 9457 problem, shaped like the events-api's. */
function sendProblem(res: ServerResponse, status: number, slug: string, title: string, headers: Record<string, string> = {}, members: Record<string, unknown> = {}): void {
  sendJson(res, status, { type: `/problems/${slug}`, title, status, ...members }, 'application/problem+json', headers);
}

/** Whether an Authorization header carries the token, compared in constant time; always true without a token. */
function bearerMatcher(token: string | undefined): (header: string | undefined) => boolean {
  if (token === undefined) return () => true;
  const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();
  const expected = digest(token);
  return (header) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    return match !== null && timingSafeEqual(digest(match[1]!), expected);
  };
}
