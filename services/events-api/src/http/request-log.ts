import { randomUUID } from 'node:crypto';
import type { Express, Request } from 'express';
import type { Logger } from '@herald/logging';
import { UNMATCHED_ROUTE, type HeraldMetrics } from '@herald/metrics';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * Gives every request of `app` an id (X-Request-Id, kept from the caller when well-formed), and
 * when it ends logs one line and records its duration under its route pattern: the one place per
 * request. Installed before any other middleware.
 */
export function installRequestLog(app: Express, logger: Logger, metrics: Pick<HeraldMetrics, 'httpRequest'>): void {
  captureRoutePatterns(app);
  app.use((req, res, next) => {
    const incoming = req.get('x-request-id');
    const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.locals.requestId = requestId;
    res.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      // winston runs its formats (redaction, timestamp, JSON) before its transports drop a line
      // below their level: skipping the call saves that work on every request (measured).
      // The path as the client sent it, without the query: a router that handled the request has
      // taken its mount path off `req.path` by now.
      if (logger.isLevelEnabled('http'))
        logger.http('request', { requestId, method: req.method, path: req.originalUrl.split('?', 1)[0], status: res.statusCode, durationMs });
      metrics.httpRequest({ method: req.method, route: routePatternOf(req), status: res.statusCode, durationSeconds: durationMs / 1000 });
    });
    next();
  });
}

const ROUTE = Symbol('route');
const ROUTE_PATTERN = Symbol('routePattern');
type RoutedRequest = Request & { [ROUTE]?: unknown; [ROUTE_PATTERN]?: string };

/**
 * The pattern of the route that handled the request, mount path included (`/admin/deliveries/:id`),
 * or UNMATCHED_ROUTE. Never the raw URL: ids in labels would make a new series per delivery.
 */
function routePatternOf(req: Request): string {
  return (req as RoutedRequest)[ROUTE_PATTERN] ?? UNMATCHED_ROUTE;
}

/**
 * Notes each request's route pattern as the router matches it. The router sets `req.route` when a
 * route matches, while `req.baseUrl` is still that route's mount path; by the time the response
 * ends an error may have taken the request back out of its router and reset `baseUrl`, so both are
 * read at that moment, by an accessor on the prototype Express gives every request of the app
 * (`app.request`). Defined once there, not on each request: an accessor defined on an object gives
 * it a shape of its own, and V8 then kept what every request allocated alive through young
 * collections (docs/benchmarks.md).
 */
function captureRoutePatterns(app: Express): void {
  Object.defineProperty(app.request, 'route', {
    configurable: true,
    enumerable: true,
    get(this: RoutedRequest) {
      return this[ROUTE];
    },
    set(this: RoutedRequest, value: { path?: unknown } | undefined) {
      this[ROUTE] = value;
      // Mount paths match in any letter case (Express routes case-insensitively) and baseUrl is the
      // path as the client wrote it: lower case gives the mount path as written, one series per route.
      if (typeof value?.path === 'string') this[ROUTE_PATTERN] = this.baseUrl.toLowerCase() + value.path;
    },
  });
}
