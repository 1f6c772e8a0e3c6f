import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { inTurn, metricValue, parseExposition, startHttpRecorder } from '@herald/testing';
import { createTestApi } from './support/api';
import { ingestEvent } from './support/events';

const api = createTestApi();
afterAll(() => api.close());

const scrape = async (): Promise<string> => {
  const res = await request(api.app).get('/metrics').expect(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text;
};
const requestsOf = (text: string, labels: Record<string, string>) => metricValue(text, 'herald_http_request_duration_seconds_count', labels) ?? 0;

describe('GET /metrics on the events-api', () => {
  it('exposes every Herald series of the events-api, and the process metrics, labelled with the service', async () => {
    const text = await scrape();
    for (const name of ['herald_events_ingested_total', 'herald_delivery_enqueues_total', 'process_cpu_user_seconds_total', 'nodejs_heap_size_used_bytes']) {
      expect(parseExposition(text).find((s) => s.name === name)?.labels.service).toBe('events-api');
    }
  });

  it("leaves the gauges of shared state (the queue's jobs, the breakers, the partitions held) to the delivery-worker", async () => {
    const text = await scrape();
    for (const name of ['herald_queue_jobs', 'herald_target_breakers', 'herald_retention_held_partitions', 'herald_event_retention_held_partitions']) {
      expect([name, text.includes(name)]).toEqual([name, false]);
    }
  });

  it('counts token requests by outcome: one refused by the token endpoint, one issued', async () => {
    const { programId } = await api.createTenant();
    const tokens = await startHttpRecorder(
      inTurn({ status: 401, body: { error: 'invalid_client' } }, { status: 200, body: { access_token: 'a', token_type: 'Bearer', expires_in: 60 } }),
    );
    try {
      const requests = (text: string, outcome: string) => metricValue(text, 'herald_oauth_token_requests_total', { outcome });
      const before = await scrape();
      const target = {
        url: 'https://shop.example/hooks',
        auth: { mode: 'oauth', authUrl: `${tokens.origin}/token`, username: 'shop', password: 'pw-0123456789' },
      };
      await api.admin('put', `/programs/${programId}/notification-target`).send(target).expect(422);
      await api.admin('put', `/programs/${programId}/notification-target`).send(target).expect(200);
      const after = await scrape();
      expect(requests(after, 'http_status')).toBe(requests(before, 'http_status')! + 1);
      expect(requests(after, 'issued')).toBe(requests(before, 'issued')! + 1);
      expect(requests(after, 'timeout')).toBe(requests(before, 'timeout'));
    } finally {
      await tokens.close();
    }
  });

  it('counts newly ingested events and their queued jobs, but not an idempotent repeat', async () => {
    const tenant = await api.createTenant();
    await api
      .admin('put', `/programs/${tenant.programId}/notification-target`)
      .send({ url: 'https://merchant.example/hooks', auth: { mode: 'none' } })
      .expect(200);
    const event = ingestEvent(tenant);
    const before = await scrape();

    await api.ingest(event).expect(201);
    const after = await scrape();
    expect(metricValue(after, 'herald_events_ingested_total')).toBe(metricValue(before, 'herald_events_ingested_total')! + 1);
    const enqueued = (text: string) => metricValue(text, 'herald_delivery_enqueues_total', { outcome: 'enqueued' });
    expect(enqueued(after)).toBe(enqueued(before)! + 1);

    await api.ingest(event).expect(200);
    expect(metricValue(await scrape(), 'herald_events_ingested_total')).toBe(metricValue(after, 'herald_events_ingested_total'));
  });

  it('records the duration of GET /events under its method, route and status', async () => {
    const tenant = await api.createTenant();
    const labels = { method: 'GET', route: '/events', status: '200' };
    const before = requestsOf(await scrape(), labels);

    await api.listEvents(tenant.merchantKey.key).expect(200);
    const after = await scrape();
    expect(requestsOf(after, labels)).toBe(before + 1);
    expect(metricValue(after, 'herald_http_request_duration_seconds_sum', labels)).toBeGreaterThan(0);
    expect(requestsOf(after, { method: 'GET', route: '/events', status: '401' })).toBe(
      requestsOf(await scrape(), { method: 'GET', route: '/events', status: '401' }),
    );
  });

  it('labels requests with route patterns, never with raw ids, and unknown paths as unmatched', async () => {
    const id = randomUUID();
    const before = await scrape();
    await api.admin('get', `/deliveries/${id}`).expect(404);
    await request(api.app).get(`/no-such-page/${id}`).expect(404);
    const after = await scrape();

    const pattern = { method: 'GET', route: '/admin/deliveries/:id', status: '404' };
    expect(requestsOf(after, pattern)).toBe(requestsOf(before, pattern) + 1);
    const unmatched = { method: 'GET', route: 'unmatched', status: '404' };
    expect(requestsOf(after, unmatched)).toBe(requestsOf(before, unmatched) + 1);
    expect(after).not.toContain(id);
  });

  it('labels a route reached in another letter case with its pattern as written, so the case of a URL makes no new series', async () => {
    const before = await scrape();
    for (const path of ['/INTERNAL/events', '/Internal/events', '/internal/EVENTS']) {
      await request(api.app).post(path).set('Authorization', `Bearer ${api.config.ingestToken}`).send({}).expect(400);
    }
    const after = await scrape();
    const pattern = { method: 'POST', route: '/internal/events', status: '400' };
    expect(requestsOf(after, pattern)).toBe(requestsOf(before, pattern) + 3);
    expect(after).not.toMatch(/route="[^"]*(INTERNAL|Internal|EVENTS)/);
  });
});

describe('GET /metrics with METRICS_TOKEN set', () => {
  const guarded = createTestApi({ METRICS_TOKEN: 'metrics-token-0123456789' });
  afterAll(() => guarded.close());

  it('refuses a scrape without the bearer token with 401', async () => {
    const res = await request(guarded.app).get('/metrics');
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="herald-metrics"');
  });

  it('answers a scrape with the bearer token', async () => {
    const res = await request(guarded.app).get('/metrics').set('Authorization', 'Bearer metrics-token-0123456789');
    expect(res.status).toBe(200);
    expect(res.text).toContain('herald_events_ingested_total');
  });
});
