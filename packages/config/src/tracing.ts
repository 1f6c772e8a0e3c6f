/**
 * OpenTelemetry tracing, read from the standard OTEL_* variables (the OpenTelemetry SDK
 * environment specification), the subset Herald honours. Off by default: a process traces only when
 * an exporter is named (OTEL_TRACES_EXPORTER) or an OTLP endpoint is given, and never under
 * OTEL_SDK_DISABLED=true.
 */
import { ConfigError } from './config-error';
import { boolean, fraction, integer, oneOf, raw, url, type Env } from './parsers';

/** OTEL_TRACES_SAMPLER's values (the specification's, minus the Jaeger and X-Ray remote samplers). */
export type TraceSampler = 'always_on' | 'always_off' | 'traceidratio' | 'parentbased_always_on' | 'parentbased_always_off' | 'parentbased_traceidratio';

/** Where finished spans go. */
export type TraceExporterConfig =
  | {
      readonly kind: 'otlp';
      /** OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, or OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`. Default `http://localhost:4318/v1/traces`. */
      readonly url: string;
      /** OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL: `http/protobuf` (default) or `http/json`. */
      readonly protocol: 'http/protobuf' | 'http/json';
      /** OTEL_EXPORTER_OTLP_(TRACES_)HEADERS: `name=value` pairs sent with each export (a collector's credential): a secret, never logged. */
      readonly headers: Readonly<Record<string, string>>;
      /** OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT: longest one export may take, in ms. Default 10000. */
      readonly timeoutMs: number;
    }
  | { readonly kind: 'console' };

/** The tracing of one process; `undefined` in a config means tracing is off. */
export interface TracingConfig {
  /** OTEL_SERVICE_NAME: the resource's service.name. Default `herald-events-api` or `herald-delivery-worker`. */
  readonly serviceName: string;
  /** OTEL_RESOURCE_ATTRIBUTES: more resource attributes, `key=value` pairs, comma-separated. */
  readonly resourceAttributes: Readonly<Record<string, string>>;
  /** OTEL_TRACES_SAMPLER. Default `parentbased_always_on`: every trace, and a caller's decision kept. */
  readonly sampler: TraceSampler;
  /** OTEL_TRACES_SAMPLER_ARG: the ratio of the `traceidratio` samplers, 0 to 1. Default 1. */
  readonly samplerRatio: number;
  readonly exporter: TraceExporterConfig;
  /** The batch span processor's limits (OTEL_BSP_*): spans past the queue's size are dropped, never waited for. */
  readonly batch: {
    /** OTEL_BSP_MAX_QUEUE_SIZE. Default 2048. */
    readonly maxQueueSize: number;
    /** OTEL_BSP_MAX_EXPORT_BATCH_SIZE. Default 512, at most the queue size. */
    readonly maxExportBatchSize: number;
    /** OTEL_BSP_SCHEDULE_DELAY: ms between exports. Default 5000. */
    readonly scheduleDelayMs: number;
    /** OTEL_BSP_EXPORT_TIMEOUT: ms. Default 30000. */
    readonly exportTimeoutMs: number;
  };
}

const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
const DEFAULT_OTLP_ENDPOINT = 'http://localhost:4318';

/**
 * The process's tracing, or undefined when off: OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none,
 * or neither OTEL_TRACES_EXPORTER nor an OTLP endpoint set (the specification's default exporter
 * is OTLP; Herald waits to be asked, so that a deployment without a collector sends nothing).
 */
export function readTracing(env: Env, defaultServiceName: string): TracingConfig | undefined {
  if (boolean(env, 'OTEL_SDK_DISABLED', false)) return undefined;
  const endpointSet = raw(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') !== undefined || raw(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') !== undefined;
  const exporterName = oneOf(env, 'OTEL_TRACES_EXPORTER', ['otlp', 'console', 'none'] as const, endpointSet ? 'otlp' : 'none');
  if (exporterName === 'none') return undefined;
  const maxQueueSize = integer(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2_048, 1, 1_000_000);
  const maxExportBatchSize = integer(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', Math.min(512, maxQueueSize), 1, 1_000_000);
  if (maxExportBatchSize > maxQueueSize) throw new ConfigError('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', `must be at most OTEL_BSP_MAX_QUEUE_SIZE (${maxQueueSize})`);
  return Object.freeze({
    serviceName: raw(env, 'OTEL_SERVICE_NAME') ?? defaultServiceName,
    resourceAttributes: Object.freeze(pairs(env, 'OTEL_RESOURCE_ATTRIBUTES')),
    sampler: oneOf(env, 'OTEL_TRACES_SAMPLER', SAMPLERS, 'parentbased_always_on'),
    samplerRatio: fraction(env, 'OTEL_TRACES_SAMPLER_ARG', 1),
    exporter: Object.freeze(exporterName === 'console' ? { kind: 'console' as const } : readOtlp(env)),
    batch: Object.freeze({
      maxQueueSize,
      maxExportBatchSize,
      scheduleDelayMs: integer(env, 'OTEL_BSP_SCHEDULE_DELAY', 5_000, 0, 3_600_000),
      exportTimeoutMs: integer(env, 'OTEL_BSP_EXPORT_TIMEOUT', 30_000, 1, 3_600_000),
    }),
  });
}

/** The OTLP exporter's settings; each signal-specific variable (…_TRACES_…) wins over the general one. */
function readOtlp(env: Env): TraceExporterConfig {
  const either = (specific: string, general: string) => (raw(env, specific) !== undefined ? specific : general);
  const endpointName = either('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT');
  const endpoint = url(env, endpointName, ['http:', 'https:'], DEFAULT_OTLP_ENDPOINT);
  // The general endpoint is a base: the signal's path goes after it (the specification's rule).
  const traces = endpointName === 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' ? endpoint : `${endpoint.replace(/\/+$/, '')}/v1/traces`;
  const protocolName = either('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL');
  return {
    kind: 'otlp',
    url: traces,
    protocol: oneOf(env, protocolName, ['http/protobuf', 'http/json'] as const, 'http/protobuf'),
    headers: Object.freeze(pairs(env, either('OTEL_EXPORTER_OTLP_TRACES_HEADERS', 'OTEL_EXPORTER_OTLP_HEADERS'))),
    timeoutMs: integer(env, either('OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', 'OTEL_EXPORTER_OTLP_TIMEOUT'), 10_000, 1, 600_000),
  };
}

/** The W3C Baggage-like list the OTEL_* variables use: `key=value` pairs, comma-separated, values percent-decoded. */
function pairs(env: Env, name: string): Record<string, string> {
  const value = raw(env, name);
  const out: Record<string, string> = {};
  if (value === undefined) return out;
  for (const pair of value.split(',')) {
    if (pair.trim() === '') continue;
    const separator = pair.indexOf('=');
    const key = pair.slice(0, separator).trim();
    // The message never repeats the value: OTEL_EXPORTER_OTLP_HEADERS holds credentials.
    if (separator <= 0 || key === '') throw new ConfigError(name, 'must be comma-separated key=value pairs');
    try {
      out[key] = decodeURIComponent(pair.slice(separator + 1).trim());
    } catch {
      throw new ConfigError(name, `has a value that is not valid percent-encoding (key ${key})`);
    }
  }
  return out;
}
