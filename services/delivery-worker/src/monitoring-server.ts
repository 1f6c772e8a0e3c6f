import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOn, opsEndpoints, problemResponse, problemType, type OpsEndpointsOptions, type PlainResponse } from '@herald/lifecycle';

// Enough for every worker a developer starts by hand on one machine.
const NEXT_PORTS_TO_TRY = 50;

export interface MonitoringServerOptions extends OpsEndpointsOptions {
  /** METRICS_PORT; 0 takes a free port (see `MonitoringServer.port`). */
  port: number;
  /** HOST: the address to listen on. Default: every interface. */
  host?: string;
  /** Whether a taken port moves on to the next free one (development defaults only). Default false. */
  movesOnWhenTaken?: boolean;
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

  const port = await listenOn(server, {
    port: options.port,
    host: options.host,
    portSetting: 'METRICS_PORT',
    nextPortsToTry: options.movesOnWhenTaken ? NEXT_PORTS_TO_TRY : 0,
  });
  return {
    port,
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
