import { ConfigError, loadApiConfig, loadWorkerConfig } from '../src';

describe('the tracing settings (OTEL_*)', () => {
  it('leave tracing off by default, with OTEL_TRACES_EXPORTER=none, and under OTEL_SDK_DISABLED=true whatever else is set', () => {
    expect(loadApiConfig({}).tracing).toBeUndefined();
    expect(loadWorkerConfig({}).tracing).toBeUndefined();
    expect(loadWorkerConfig({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing).toBeUndefined();
    expect(loadWorkerConfig({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' }).tracing).toBeUndefined();
  });

  it('turn tracing on with an OTLP endpoint alone: protobuf to <endpoint>/v1/traces, every trace sampled, the service named after the process', () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' };
    expect(loadWorkerConfig(env).tracing).toEqual({
      serviceName: 'herald-delivery-worker',
      resourceAttributes: {},
      sampler: 'parentbased_always_on',
      samplerRatio: 1,
      exporter: { kind: 'otlp', url: 'http://collector:4318/v1/traces', protocol: 'http/protobuf', headers: {}, timeoutMs: 10_000 },
      batch: { maxQueueSize: 2048, maxExportBatchSize: 512, scheduleDelayMs: 5000, exportTimeoutMs: 30_000 },
    });
    expect(loadApiConfig(env).tracing?.serviceName).toBe('herald-events-api');
  });

  it('read the signal-specific variables over the general ones, and the standard defaults', () => {
    const tracing = loadApiConfig({
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://general:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/custom/path',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-general=1',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'authorization=Bearer%20abc, x-tenant = herald ',
      OTEL_EXPORTER_OTLP_TIMEOUT: '5000',
      OTEL_SERVICE_NAME: 'payments-herald-api',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=production,service.namespace=payments',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_BSP_MAX_QUEUE_SIZE: '4096',
    }).tracing;
    expect(tracing).toMatchObject({
      serviceName: 'payments-herald-api',
      resourceAttributes: { 'deployment.environment.name': 'production', 'service.namespace': 'payments' },
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.25,
      exporter: {
        kind: 'otlp',
        url: 'https://traces.example/custom/path',
        protocol: 'http/json',
        headers: { authorization: 'Bearer abc', 'x-tenant': 'herald' },
        timeoutMs: 5000,
      },
      batch: { maxQueueSize: 4096, maxExportBatchSize: 512 },
    });
    // Without an endpoint, the exporter named alone goes to the collector's standard local address.
    expect(loadWorkerConfig({ OTEL_TRACES_EXPORTER: 'otlp' }).tracing?.exporter).toMatchObject({ url: 'http://localhost:4318/v1/traces' });
    expect(loadWorkerConfig({ OTEL_TRACES_EXPORTER: 'console' }).tracing?.exporter).toEqual({ kind: 'console' });
  });

  it.each([
    ['OTEL_TRACES_EXPORTER', 'jaeger', 'must be one of otlp, console, none, got "jaeger"'],
    [
      'OTEL_TRACES_SAMPLER',
      'sometimes',
      'must be one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio, got "sometimes"',
    ],
    ['OTEL_TRACES_SAMPLER_ARG', '1.5', 'must be a number from 0 to 1, got "1.5"'],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'grpc://collector:4317', 'must use http:// or https://'],
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc', 'must be one of http/protobuf, http/json, got "grpc"'],
    ['OTEL_BSP_MAX_EXPORT_BATCH_SIZE', '5000', 'must be at most OTEL_BSP_MAX_QUEUE_SIZE (2048)'],
  ])('refuse %s=%s, naming the variable', (variable, value, message) => {
    expect(() => loadWorkerConfig({ OTEL_TRACES_EXPORTER: 'otlp', [variable]: value })).toThrow(new ConfigError(variable, message));
  });

  it('refuse malformed OTEL_EXPORTER_OTLP_HEADERS without repeating the value, which holds a credential', () => {
    const load = () => loadWorkerConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_HEADERS: 'collector-secret-without-a-name' });
    expect(load).toThrow(new ConfigError('OTEL_EXPORTER_OTLP_HEADERS', 'must be comma-separated key=value pairs'));
    expect(() => loadWorkerConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_HEADERS: 'authorization=%E0%A4%A' })).toThrow(
      new ConfigError('OTEL_EXPORTER_OTLP_HEADERS', 'has a value that is not valid percent-encoding (key authorization)'),
    );
  });
});
