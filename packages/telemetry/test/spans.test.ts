import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import type { TracingConfig } from '@herald/config';
import {
  contextOfTraceparent,
  contextWith,
  endSpan,
  httpClientAttributes,
  inSpan,
  SpanKind,
  startSpan,
  startTracing,
  traceLogFields,
  traceparentOf,
} from '../src';

const SETTINGS: TracingConfig = {
  serviceName: 'herald-test',
  resourceAttributes: { 'deployment.environment.name': 'test' },
  sampler: 'parentbased_always_on',
  samplerRatio: 1,
  exporter: { kind: 'console' },
  batch: { maxQueueSize: 100, maxExportBatchSize: 10, scheduleDelayMs: 10, exportTimeoutMs: 1000 },
};

describe('tracing', () => {
  it('is off without settings: no tracer, and flushing or shutting down does nothing', async () => {
    const tracing = startTracing(undefined);
    expect(tracing.tracer).toBeUndefined();
    await expect(tracing.shutdown()).resolves.toBeUndefined();
  });

  it("carries a span's context through a W3C traceparent, so that a span of another process is its child", async () => {
    const exporter = new InMemorySpanExporter();
    const tracing = startTracing(SETTINGS, { exporter });
    const tracer = tracing.tracer!;
    const parent = startSpan(tracer, ROOT_CONTEXT, 'add deliveries', SpanKind.PRODUCER, {});
    const traceparent = traceparentOf(contextWith(ROOT_CONTEXT, parent))!;
    expect(traceparent).toBe(`00-${parent.spanContext().traceId}-${parent.spanContext().spanId}-01`);
    endSpan(parent);

    const carried = contextOfTraceparent(traceparent);
    expect(traceLogFields(carried)).toEqual({ trace_id: parent.spanContext().traceId, span_id: parent.spanContext().spanId });
    await expect(inSpan(tracer, carried, 'SELECT deliveries', SpanKind.CLIENT, {}, async () => Promise.reject(new RangeError('down')))).rejects.toThrow('down');
    await tracing.flush();
    const [, child] = exporter.getFinishedSpans();
    expect(child!.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
    expect(child!.spanContext().traceId).toBe(parent.spanContext().traceId);
    // A failed step says what kind of failure, never its message.
    expect(child!.attributes['error.type']).toBe('RangeError');
    expect(child!.status.code).toBe(2);
    expect(child!.resource.attributes).toMatchObject({ 'service.name': 'herald-test', 'deployment.environment.name': 'test' });
    await tracing.shutdown();
  });

  it('reads a missing or malformed traceparent as no parent, and gives no log fields without a span', () => {
    for (const carried of [undefined, 'not-a-traceparent', '00-00000000000000000000000000000000-0000000000000000-01']) {
      expect(traceLogFields(contextOfTraceparent(carried))).toEqual({});
    }
    expect(traceLogFields(undefined)).toEqual({});
  });

  it("names a client request's URL without its user info and with every query value masked", () => {
    expect(httpClientAttributes('POST', new URL('https://user:pw@merchant.example/hooks/1?token=abc&x=&flag#frag'))).toEqual({
      'http.request.method': 'POST',
      'server.address': 'merchant.example',
      'server.port': 443,
      'url.full': 'https://merchant.example/hooks/1?token=***&x=&***',
    });
  });

  it('gives up the last export at shutdown after its time limit when the collector never answers', async () => {
    // An exporter whose export never ends, as over a collector that never answers. (The OTLP
    // exporter itself loads Node's http client with a dynamic import, which Jest cannot run: the
    // services' OTLP export is tested across processes in services/events-api/test/tracing.test.ts.)
    let exported = 0;
    const tracing = startTracing(SETTINGS, {
      exporter: {
        export: () => {
          exported += 1;
        },
        shutdown: async () => undefined,
      },
    });
    endSpan(startSpan(tracing.tracer!, ROOT_CONTEXT, 'GET /events', SpanKind.SERVER, {}));
    const started = Date.now();
    await expect(tracing.shutdown(200)).rejects.toThrow('the last spans were not exported within 200 ms');
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(exported).toBe(1);
  });
});
