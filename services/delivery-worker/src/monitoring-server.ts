import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { opsEndpoints, problemResponse, problemType, type OpsEndpointsOptions, type PlainResponse } from '@herald/lifecycle';

export interface MonitoringServerOptions extends OpsEndpointsOptions {
  /** METRICS_PORT; 0 takes a free port (see `MonitoringServer.port`). */
  port: number;
  /** Host to listen on. Default: every interface, so a scraper on another machine reaches it. */
  host?: string;
}

export interface MonitoringServer {
  /** The port listened on (the one chosen when METRICS_PORT is 0). */
  readonly port: number;
  /** Stops listening and drops idle keep-alive connections. */
  close(): Promise<void>;
}

/**
 * The delivery-worker's own small HTTP listener, the node:http adapter of the ops endpoints both
 * services serve (GET /metrics, /healthz, /readyz). Any other method is 405, any other path 404.
 */
export async function startMonitoringServer(options: MonitoringServerOptions): Promise<MonitoringServer> {
  const endpoints = opsEndpoints(options);
  const server = createServer((req, res) => {
    answer(req).then(
      (response) => send(res, response),
      () => {
        if (!res.headersSent) send(res, problemResponse({ type: problemType('internal'), title: 'Internal Server Error', status: 500 }));
        else res.destroy();
      },
    );
  });

  async function answer(req: IncomingMessage): Promise<PlainResponse> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return problemResponse({ type: problemType('method_not_allowed'), title: 'Method Not Allowed', status: 405 }, { Allow: 'GET, HEAD' });
    }
    const handler = endpoints.get((req.url ?? '/').split('?')[0]!);
    if (!handler) return problemResponse({ type: problemType('not_found'), title: 'Not Found', status: 404 });
    return handler({ authorization: req.headers.authorization, clientAddress: req.socket.remoteAddress });
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

function send(res: ServerResponse, { status, headers, body }: PlainResponse): void {
  res.writeHead(status, headers).end(body);
}
