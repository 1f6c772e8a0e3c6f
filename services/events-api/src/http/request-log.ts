import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import type { Logger } from '@herald/logging';
import { UNMATCHED_ROUTE, type HeraldMetrics } from '@herald/metrics';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * Gives every request an id (X-Request-Id, kept from the caller when well-formed), and when it ends
 * logs one line and records its duration under its route pattern: the one place per request.
 */
export function requestLog(logger: Logger, metrics: Pick<HeraldMetrics, 'httpRequest'>): RequestHandler {
  return (req, res, next) => {
    const incoming = req.get('x-request-id');
    const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.locals.requestId = requestId;
    res.set('X-Request-Id', requestId);
    const routePattern = captureRoutePattern(req);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      // winston runs its formats (redaction, timestamp, JSON) before its transports drop a line
      // below their level: skipping the call saves that work on every request (measured).
      if (logger.isLevelEnabled('http')) logger.http('request', { requestId, method: req.method, path: req.path, status: res.statusCode, durationMs });
      metrics.httpRequest({ method: req.method, route: routePattern(), status: res.statusCode, durationSeconds: durationMs / 1000 });
    });
    next();
  };
}

/**
 * The pattern of the route that handled the request, mount path included (`/admin/deliveries/:id`),
 * or UNMATCHED_ROUTE. The router sets `req.route` when a route matches, while `req.baseUrl` is still
 * that route's mount path; by the time the response ends an error may have taken the request back
 * out of its router and reset `baseUrl`, so both are read at that moment. Never the raw URL: ids
 * in labels would make a new series per delivery.
 */
function captureRoutePattern(req: Request): () => string {
  let route: unknown;
  let pattern: string | undefined;
  Object.defineProperty(req, 'route', {
    configurable: true,
    enumerable: true,
    get: () => route,
    set(value: { path?: unknown } | undefined) {
      route = value;
      // Mount paths match in any letter case (Express routes case-insensitively) and baseUrl is the
      // path as the client wrote it: lower case gives the mount path as written, one series per route.
      if (typeof value?.path === 'string') pattern = req.baseUrl.toLowerCase() + value.path;
    },
  });
  return () => pattern ?? UNMATCHED_ROUTE;
}
