import { randomBytes } from 'node:crypto';
import { createRedisConnection } from '@herald/queue';
import {
  always,
  otlpSpans,
  startHttpRecorder,
  startService,
  uniqueId,
  useMigratedDatabase,
  waitFor,
  type ExportedSpan,
  type HttpRecorder,
  type ServiceProcess,
} from '@herald/testing';

// One event's trace across the two processes, as they run in production: the events-api and a
// delivery worker, each exporting its spans over OTLP/HTTP (JSON) to a collector on loopback.
// A database of the file's own: the worker's sweeper must not find other files' deliveries.
const database = useMigratedDatabase('herald_tracing');

// Distinctive values that must appear in no span: the targets' credentials, the token, a query
// value of the callback URL, the event's content, and the collector's own credential.
const BASIC_PASSWORD = `basic-secret-${randomBytes(6).toString('hex')}`;
const OAUTH_PASSWORD = `oauth-secret-${randomBytes(6).toString('hex')}`;
const ACCESS_TOKEN = `access-token-${randomBytes(6).toString('hex')}`;
const QUERY_SECRET = `query-secret-${randomBytes(6).toString('hex')}`;
const PAYLOAD_MARK = `payload-${randomBytes(6).toString('hex')}`;
const COLLECTOR_KEY = `collector-key-${randomBytes(6).toString('hex')}`;

const ADMIN = { Authorization: 'Bearer dev-admin-token', 'Content-Type': 'application/json' };

const servers: HttpRecorder[] = [];
const processes: ServiceProcess[] = [];
afterEach(async () => {
  await Promise.all(processes.splice(0).map((service) => service.stop('SIGTERM')));
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function server(...args: Parameters<typeof startHttpRecorder>): Promise<HttpRecorder> {
  const started = await startHttpRecorder(...args);
  servers.push(started);
  return started;
}

async function call(origin: string, method: string, path: string, body: unknown, headers: Record<string, string> = ADMIN): Promise<Record<string, unknown>> {
  const res = await fetch(`${origin}${path}`, { method, headers, body: JSON.stringify(body) });
  const answer = (await res.json()) as Record<string, unknown>;
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(answer)}`);
  return answer;
}

/** The one span of `spans` named `name` under `parent`; fails naming what there was. */
function childOf(spans: ExportedSpan[], parent: ExportedSpan, name: string, where: (span: ExportedSpan) => boolean = () => true): ExportedSpan {
  const found = spans.filter((span) => span.parentSpanId === parent.spanId && span.name === name && where(span));
  if (found.length !== 1) throw new Error(`expected one span "${name}" under "${parent.name}", found ${found.length}: ${spans.map((s) => s.name).join(', ')}`);
  return found[0]!;
}

/** Every log line of a process's output, parsed. */
function logLines(service: ServiceProcess): Array<Record<string, unknown>> {
  return service
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('OpenTelemetry tracing (OTEL_* settings)', () => {
  it("makes one trace of an event from the producer's request to both targets' attempt records, across the events-api and the worker, with no secret in any span and the trace id in the logs", async () => {
    const collector = await server(always({ status: 200, body: {} }));
    const receiver = await server(always({ status: 200 }));
    const tokens = await server(always({ status: 200, body: { access_token: ACCESS_TOKEN, expires_in: 3600, token_type: 'Bearer' } }));
    const queuePrefix = uniqueId('test');
    const otel = {
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.origin,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: `x-collector-key=${COLLECTOR_KEY}`,
      OTEL_BSP_SCHEDULE_DELAY: '50',
    };
    const common = { NODE_ENV: 'test', LOG_LEVEL: 'http', DATABASE_URL: database.url, QUEUE_PREFIX: queuePrefix, ...otel };
    const api = startService('services/events-api/src/server.ts', { ...common, PORT: '0' });
    processes.push(api);
    const worker = startService('services/delivery-worker/src/main.ts', { ...common, METRICS_PORT: '0', DELIVERY_BACKOFF_MS: '10' });
    processes.push(worker);
    const { port } = await api.waitForLog('events-api listening');
    const origin = `http://127.0.0.1:${String(port)}`;
    await worker.waitForLog('delivery-worker ready');

    // The program's target with Basic auth, the merchant's with OAuth: one event of the merchant
    // goes to both.
    const program = await call(origin, 'POST', '/admin/programs', { name: 'Traced program' });
    const merchant = await call(origin, 'POST', '/admin/merchants', { programId: program.id, name: 'Traced merchant' });
    await call(origin, 'PUT', `/admin/programs/${String(program.id)}/notification-target`, {
      url: `${receiver.origin}/program-hook`,
      auth: { mode: 'basic', username: 'program-user', password: BASIC_PASSWORD },
    });
    await call(origin, 'PUT', `/admin/merchants/${String(merchant.id)}/notification-target`, {
      url: `${receiver.origin}/merchant-hook?signature=${QUERY_SECRET}`,
      auth: { mode: 'oauth', authUrl: `${tokens.origin}/oauth/token`, username: 'merchant-client', password: OAUTH_PASSWORD },
    });
    // Saving the OAuth target checked its credentials and cached the token: forgotten, so that the
    // worker requests one in the event's trace.
    const redis = createRedisConnection('redis://127.0.0.1:6379', { role: 'worker' });
    try {
      const cached = await redis.keys(`${queuePrefix}:callback-auth:*`);
      if (cached.length > 0) await redis.del(...cached);
    } finally {
      await redis.quit();
    }

    // The producer's own trace: the ingest continues it.
    const traceId = randomBytes(16).toString('hex');
    const producerSpanId = randomBytes(8).toString('hex');
    const ingested = await call(
      origin,
      'POST',
      '/internal/events',
      {
        programId: program.id,
        merchantId: merchant.id,
        sourceSystem: 'subscription-module',
        origin: 'automated',
        eventType: 'status.updated',
        objectId: 'payment-1',
        // A merchant's target takes payments (not subscriptions): the event goes to both targets.
        objectType: 'payment',
        metadata: { note: PAYLOAD_MARK },
      },
      { Authorization: 'Bearer dev-ingest-token', 'Content-Type': 'application/json', traceparent: `00-${traceId}-${producerSpanId}-01` },
    );
    expect(ingested.id).toEqual(expect.any(String));

    await waitFor(
      async () => receiver.requests.length,
      (n) => n === 2,
      20_000,
      'both callbacks',
    );
    const spans = await waitFor(
      async () => otlpSpans(collector),
      (found) => found.filter((span) => span.name === 'INSERT delivery_attempts').length === 2,
      20_000,
      "both attempts' record spans at the collector",
    );
    const traced = spans.filter((span) => span.traceId === traceId);

    // events-api: server span (continuing the producer's), the transaction, the enqueue.
    const request = traced.find((span) => span.name === 'POST /internal/events')!;
    expect(request).toMatchObject({ service: 'herald-events-api', kind: 2, parentSpanId: producerSpanId });
    expect(request.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/internal/events',
      'url.path': '/internal/events',
      'http.response.status_code': 201,
    });
    const transaction = childOf(traced, request, 'INSERT events deliveries');
    expect(transaction).toMatchObject({ kind: 3, attributes: { 'db.system.name': 'postgresql', 'db.collection.name': 'events' } });
    const enqueue = childOf(traced, request, 'add deliveries');
    expect(enqueue).toMatchObject({
      kind: 4,
      attributes: { 'messaging.system': 'bullmq', 'messaging.destination.name': 'deliveries', 'messaging.batch.message_count': 2 },
    });

    // delivery-worker: one job span per delivery, each under the enqueue, with its steps.
    const jobs = traced.filter((span) => span.name === 'process deliveries');
    expect(jobs).toHaveLength(2);
    for (const job of jobs) {
      expect(job).toMatchObject({ service: 'herald-delivery-worker', kind: 5, parentSpanId: enqueue.spanId });
      expect(job.attributes).toMatchObject({ 'messaging.operation.type': 'process', 'herald.delivery.outcome': 'delivered', 'herald.attempt': 1 });
      expect(childOf(traced, job, 'target-gate admit').attributes['herald.gate.admitted']).toBe(true);
      expect(childOf(traced, job, 'SELECT deliveries').attributes['db.system.name']).toBe('postgresql');
      childOf(traced, job, 'INSERT delivery_attempts');
    }
    const [programJob, merchantJob] = ['/program-hook', '/merchant-hook'].map(
      (path) => jobs.find((job) => traced.some((span) => span.parentSpanId === job.spanId && String(span.attributes['url.full']).includes(path)))!,
    );
    const programPost = childOf(traced, programJob!, 'POST');
    expect(programPost).toMatchObject({ kind: 3, attributes: { 'url.full': `${receiver.origin}/program-hook`, 'http.response.status_code': 200 } });
    // The OAuth target's job: the token request, then the callback, its query value masked.
    const tokenRequest = childOf(traced, merchantJob!, 'POST', (span) => String(span.attributes['url.full']).startsWith(tokens.origin));
    expect(tokenRequest.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 200, 'server.address': '127.0.0.1' });
    const merchantPost = childOf(traced, merchantJob!, 'POST', (span) => String(span.attributes['url.full']).startsWith(receiver.origin));
    expect(merchantPost.attributes['url.full']).toBe(`${receiver.origin}/merchant-hook?signature=***`);
    expect(tokens.requests).toHaveLength(2);

    // No secret and no content in anything exported (attributes, names, resources), nor any auth scheme.
    const exported = collector.requests.map((r) => r.body).join('\n');
    for (const secret of [
      BASIC_PASSWORD,
      OAUTH_PASSWORD,
      ACCESS_TOKEN,
      QUERY_SECRET,
      PAYLOAD_MARK,
      COLLECTOR_KEY,
      'dev-ingest-token',
      'dev-admin-token',
      'Basic ',
      'Bearer ',
    ]) {
      expect(exported).not.toContain(secret);
    }
    // The collector's credential went where it belongs: in the export's headers.
    expect(collector.requests.every((r) => r.headers['x-collector-key'] === COLLECTOR_KEY)).toBe(true);

    // The logs of that work carry the trace id.
    const apiLines = logLines(api).filter((line) => line.message === 'request' && line.path === '/internal/events');
    expect(apiLines).toEqual([expect.objectContaining({ trace_id: traceId, span_id: request.spanId })]);
    const delivered = logLines(worker).filter((line) => line.message === 'callback delivered');
    expect(delivered).toHaveLength(2);
    expect(delivered.every((line) => line.trace_id === traceId)).toBe(true);
  });
});
