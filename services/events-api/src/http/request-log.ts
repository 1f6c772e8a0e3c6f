import { randomUUID } from 'node:crypto';
import type { Express, Request, Response } from 'express';
import type { Logger } from '@herald/logging';
import { UNMATCHED_ROUTE, type HeraldMetrics } from '@herald/metrics';
import { contextOfHeaders, contextWith, endHttpSpan, SpanKind, startSpan, traceLogFields, type Span, type TraceContext, type Tracer } from '@herald/telemetry';
import { ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_ROUTE, ATTR_URL_PATH, ATTR_URL_SCHEME } from '@opentelemetry/semantic-conventions';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * Gives every request of `app` an id (X-Request-Id, kept from the caller when well-formed), and
 * when it ends logs one line and records its duration under its route pattern: the one place per
 * request. With a tracer, each request is also an HTTP server span (see serverSpan), the parent of
 * the work it causes (requestTrace). Installed before any other middleware.
 */
export function installRequestLog(app: Express, logger: Logger, metrics: Pick<HeraldMetrics, 'httpRequest'>, tracer?: Tracer): void {
  captureRoutePatterns(app);
  app.use((req, res, next) => {
    const incoming = req.get('x-request-id');
    const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.locals.requestId = requestId;
    res.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    // The path as the client sent it, without the query (whose values may be anything).
    const path = (): string => req.originalUrl.split('?', 1)[0]!;
    const span = tracer === undefined ? undefined : serverSpan(tracer, req, res, path());
    res.on('finish', () => {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      const route = routePatternOf(req);
      if (span !== undefined) endServerSpan(span, req.method, route, res.statusCode);
      // winston runs its formats (redaction, timestamp, JSON) before its transports drop a line
      // below their level: skipping the call saves that work on every request (measured).
      // A router that handled the request has taken its mount path off `req.path` by now.
      if (logger.isLevelEnabled('http'))
        logger.http('request', { requestId, method: req.method, path: path(), status: res.statusCode, durationMs, ...traceLogFields(requestTrace(res)) });
      metrics.httpRequest({ method: req.method, route, status: res.statusCode, durationSeconds: durationMs / 1000 });
    });
    // A client gone before the answer: the span ends all the same, failed.
    if (span !== undefined) res.on('close', () => res.writableFinished || endServerSpan(span, req.method, routePatternOf(req), 499));
    next();
  });
}

/** The trace of a request's work (its server span), for the spans and log lines it causes; undefined when tracing is off. */
export function requestTrace(res: Response): TraceContext | undefined {
  return res.locals.trace as TraceContext | undefined;
}

/**
 * An HTTP server span (OpenTelemetry semantic conventions), made by hand here rather than by the
 * Express and http instrumentations, which need a context manager. It continues the caller's trace
 * when the request has a W3C `traceparent`. Its attributes: the method, the path without the query,
 * the route pattern and the status; no header (x-api-key, Authorization) and no body.
 */
function serverSpan(tracer: Tracer, req: Request, res: Response, path: string): Span {
  const parent = contextOfHeaders(req.headers);
  const span = startSpan(tracer, parent, req.method, SpanKind.SERVER, {
    [ATTR_HTTP_REQUEST_METHOD]: req.method,
    [ATTR_URL_PATH]: path,
    [ATTR_URL_SCHEME]: req.protocol,
  });
  res.locals.trace = contextWith(parent, span);
  return span;
}

/** Names the span `{method} {route}` once the route is known (the method alone when none matched), and ends it. */
function endServerSpan(span: Span, method: string, route: string, status: number): void {
  if (!span.isRecording()) return;
  if (route !== UNMATCHED_ROUTE) {
    span.updateName(`${method} ${route}`);
    span.setAttribute(ATTR_HTTP_ROUTE, route);
  }
  endHttpSpan(span, status, 500);
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
