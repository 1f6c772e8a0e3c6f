import {
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { maskQueryValues } from '@herald/domain';
import {
  ATTR_DB_COLLECTION_NAME,
  ATTR_DB_OPERATION_NAME,
  ATTR_DB_QUERY_SUMMARY,
  ATTR_DB_SYSTEM_NAME,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
  DB_SYSTEM_NAME_VALUE_POSTGRESQL,
} from '@opentelemetry/semantic-conventions';
import { w3c } from './tracing';

// The conventions' attribute names, read once: the package exports each through a getter, which
// cost a call per use on the delivery path (V8 profile of the worker with tracing on).
const HTTP_REQUEST_METHOD = ATTR_HTTP_REQUEST_METHOD;
const HTTP_RESPONSE_STATUS_CODE = ATTR_HTTP_RESPONSE_STATUS_CODE;
const SERVER_ADDRESS = ATTR_SERVER_ADDRESS;
const SERVER_PORT = ATTR_SERVER_PORT;
const URL_FULL = ATTR_URL_FULL;
const ERROR_TYPE = ATTR_ERROR_TYPE;
const DB_SYSTEM_NAME = ATTR_DB_SYSTEM_NAME;
const DB_OPERATION_NAME = ATTR_DB_OPERATION_NAME;
const DB_COLLECTION_NAME = ATTR_DB_COLLECTION_NAME;
const DB_QUERY_SUMMARY = ATTR_DB_QUERY_SUMMARY;
const POSTGRESQL = DB_SYSTEM_NAME_VALUE_POSTGRESQL;

// How a span's parent travels: as a plain value (an OpenTelemetry Context holding the parent span),
// handed from step to step by the code itself. Nothing here reads or sets a "current" context.

/** The context a span is started under: the span that is current for a piece of work, passed along as a value. */
export type TraceContext = Context;

export { SpanKind, type Span, type Tracer };

/**
 * The messaging attributes of the OpenTelemetry semantic conventions (still in their incubating
 * set, which the package advises against importing: they are named here).
 */
export const MESSAGING = {
  system: 'messaging.system',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  destinationName: 'messaging.destination.name',
  messageId: 'messaging.message.id',
  batchMessageCount: 'messaging.batch.message_count',
} as const;

/** messaging.system of the deliveries queue: BullMQ over Redis (no value of the conventions' list fits better). */
export const MESSAGING_SYSTEM_BULLMQ = 'bullmq';

/** Starts a span under `parent`, the context passed along by the caller (never a current one). */
export function startSpan(tracer: Tracer, parent: TraceContext, name: string, kind: SpanKind, attributes: Attributes): Span {
  return tracer.startSpan(name, { kind, attributes }, parent);
}

/** Runs `work` inside a span under `parent`: the span ends when the work settles, failed (errorTypeOf) when it rejects. */
export async function inSpan<T>(
  tracer: Tracer,
  parent: TraceContext,
  name: string,
  kind: SpanKind,
  attributes: Attributes,
  work: () => Promise<T>,
): Promise<T> {
  const span = tracer.startSpan(name, { kind, attributes }, parent);
  try {
    const result = await work();
    span.end();
    return result;
  } catch (error) {
    endSpan(span, errorTypeOf(error));
    throw error;
  }
}

/** The context whose current span is `span`: the parent to hand to the next steps of its work. */
export function contextWith(parent: TraceContext, span: Span): TraceContext {
  return trace.setSpan(parent, span);
}

/**
 * Ends a span; with `errorType` (an error's class or kind, a status code: never a message, which
 * may quote what a merchant sent) as a failed one: `error.type` and the ERROR status.
 */
export function endSpan(span: Span, errorType?: string): void {
  if (errorType !== undefined) {
    span.setAttribute(ERROR_TYPE, errorType);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

/** Ends an HTTP span with its answer's status, failed from `failedFrom` on (400 for a client span, 500 for a server span). */
export function endHttpSpan(span: Span, status: number, failedFrom: 400 | 500): void {
  span.setAttribute(HTTP_RESPONSE_STATUS_CODE, status);
  endSpan(span, status >= failedFrom ? String(status) : undefined);
}

/** The `error.type` of a thrown value: its class name, which names a kind of failure and holds no data. */
export function errorTypeOf(error: unknown): string {
  return error instanceof Error ? error.name : '_OTHER';
}

/** The W3C `traceparent` of a context (to carry in a job), or undefined when it holds no valid span. */
export function traceparentOf(context: TraceContext): string | undefined {
  const carrier: Record<string, string> = {};
  w3c.inject(context, carrier, defaultTextMapSetter);
  return carrier.traceparent;
}

/** The context a carried W3C `traceparent` stands for (a remote parent); the root context when absent or malformed. */
export function contextOfTraceparent(traceparent: string | undefined): TraceContext {
  if (traceparent === undefined) return ROOT_CONTEXT;
  return w3c.extract(ROOT_CONTEXT, { traceparent }, defaultTextMapGetter);
}

/** The context an incoming request's `traceparent` and `tracestate` headers stand for; the root context without them. */
export function contextOfHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): TraceContext {
  if (headers.traceparent === undefined) return ROOT_CONTEXT;
  return w3c.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
}

/** What a log line of a traced piece of work carries: its trace and span ids (none without a span). */
export interface TraceLogFields {
  trace_id?: string;
  span_id?: string;
}

const NO_FIELDS: TraceLogFields = Object.freeze({});

/** The `trace_id` and `span_id` fields for a log line of work done under `context`; none when it is untraced. */
export function traceLogFields(context: TraceContext | undefined): TraceLogFields {
  const span = context === undefined ? undefined : trace.getSpanContext(context);
  return span === undefined ? NO_FIELDS : { trace_id: span.traceId, span_id: span.spanId };
}

/**
 * The attributes of an HTTP client span (`{method}`, kind CLIENT): no user info, and every query
 * value masked (a merchant's URL may carry a token in its query), so that no attribute holds a secret.
 */
export function httpClientAttributes(method: string, url: URL): Attributes {
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  const full = `${url.protocol}//${url.host}${url.pathname}`;
  return {
    [HTTP_REQUEST_METHOD]: method,
    [SERVER_ADDRESS]: url.hostname,
    [SERVER_PORT]: port,
    [URL_FULL]: url.search === '' ? full : maskQueryValues(full + url.search),
  };
}

/**
 * The attributes of a PostgreSQL client span: the operation and the table (the span is named
 * `{operation} {table}`, or by `summary` for a transaction of several statements). No query text:
 * its values are the event's and the merchant's data. Frozen: made once per statement kind, at start-up.
 */
export function postgresAttributes(operation: string, table: string, summary?: string): Attributes {
  return Object.freeze({
    [DB_SYSTEM_NAME]: POSTGRESQL,
    [DB_OPERATION_NAME]: operation,
    [DB_COLLECTION_NAME]: table,
    ...(summary === undefined ? {} : { [DB_QUERY_SUMMARY]: summary }),
  });
}
