import type { Tracer } from '@opentelemetry/api';
import type { TracingConfig } from '@herald/config';
import { withTimeout } from '@herald/domain';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import rootPackage from '../../../package.json';

/** A process's tracing: the tracer its components start spans with, or none when tracing is off. */
export interface Tracing {
  /** Undefined when off: every traced code path then costs one branch and nothing else. */
  readonly tracer: Tracer | undefined;
  /** Exports the spans ended so far (tests; and shutdown, below). */
  flush(): Promise<void>;
  /**
   * Exports what is left and stops; the process calls it last on SIGTERM. Rejects after
   * `timeoutMs` (default 2000) if the collector has not taken the spans by then: a collector that
   * does not answer must not hold the process past its SHUTDOWN_TIMEOUT_MS.
   */
  shutdown(timeoutMs?: number): Promise<void>;
}

/** What startTracing takes besides the settings. */
export interface TracingOptions {
  /**
   * Where spans go instead of the configured exporter, e.g. the SDK's InMemorySpanExporter in a
   * test or a discarding one in the bench; the settings' sampler and batch limits still apply.
   */
  exporter?: SpanExporter;
}

const OFF: Tracing = Object.freeze({ tracer: undefined, flush: async () => undefined, shutdown: async () => undefined });

/**
 * Starts the process's tracer provider from its OTEL_* settings (@herald/config readTracing), or
 * returns tracing off when they are undefined. The provider is not registered as the global one,
 * and no context manager is installed: Herald passes each span's parent explicitly (see spans.ts),
 * which costs nothing per operation, where the AsyncLocalStorage context manager and the
 * per-command auto-instrumentations cost a quarter of the worker's throughput (docs/operations.md).
 * Spans are exported in batches by a BatchSpanProcessor whose queue is bounded: past it spans are
 * dropped, never waited for.
 */
export function startTracing(settings: TracingConfig | undefined, options: TracingOptions = {}): Tracing {
  if (settings === undefined) return OFF;
  const exporter = options.exporter ?? exporterOf(settings.exporter);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      ...settings.resourceAttributes,
      [ATTR_SERVICE_NAME]: settings.serviceName,
      [ATTR_SERVICE_VERSION]: rootPackage.version,
    }),
    sampler: samplerOf(settings),
    spanProcessors: [
      new BatchSpanProcessor(exporter, {
        maxQueueSize: settings.batch.maxQueueSize,
        maxExportBatchSize: settings.batch.maxExportBatchSize,
        scheduledDelayMillis: settings.batch.scheduleDelayMs,
        exportTimeoutMillis: settings.batch.exportTimeoutMs,
      }),
    ],
  });
  return {
    tracer: provider.getTracer('herald', rootPackage.version),
    flush: () => provider.forceFlush(),
    shutdown: (timeoutMs = 2_000) => withTimeout(provider.shutdown(), timeoutMs, `the last spans were not exported within ${timeoutMs} ms`),
  };
}

function exporterOf(settings: TracingConfig['exporter']): SpanExporter {
  if (settings.kind === 'console') return new ConsoleSpanExporter();
  const config = { url: settings.url, headers: { ...settings.headers }, timeoutMillis: settings.timeoutMs };
  return settings.protocol === 'http/json' ? new OtlpJsonExporter(config) : new OtlpProtobufExporter(config);
}

function samplerOf({ sampler, samplerRatio }: TracingConfig): Sampler {
  switch (sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(samplerRatio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(samplerRatio) });
  }
}

// Re-exported for spans.ts, which reads and writes `traceparent` with the SDK's own W3C code.
export const w3c = new W3CTraceContextPropagator();
