/**
 * OpenTelemetry tracing (docs/operations.md, "Tracing"): each service starts its tracer provider
 * from the OTEL_* settings (startTracing) and hands the tracer, or undefined when tracing is off,
 * to the components that make spans. A span's parent is always passed explicitly, as a value; the
 * job of a delivery carries its trace as a W3C `traceparent` string.
 */
export { startTracing, type Tracing, type TracingOptions } from './tracing';
export {
  contextOfHeaders,
  contextOfTraceparent,
  contextWith,
  endHttpSpan,
  endSpan,
  errorTypeOf,
  httpClientAttributes,
  inSpan,
  MESSAGING,
  MESSAGING_SYSTEM_BULLMQ,
  postgresAttributes,
  SpanKind,
  startSpan,
  traceLogFields,
  traceparentOf,
  type Span,
  type TraceContext,
  type TraceLogFields,
  type Tracer,
} from './spans';
