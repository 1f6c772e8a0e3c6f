import request from 'supertest';
import { createTestApi } from './support/api';

const basic = (username: string, password: string) => `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

describe('failed authentications with AUTH_FAILURES_PER_ADDRESS=3', () => {
  const api = createTestApi({ AUTH_FAILURES_PER_ADDRESS: '3', AUTH_FAILURE_WINDOW_SECONDS: '600' });
  afterAll(() => api.close());

  it('answers 429 problem+json with Retry-After to every credential from the address, right ones included, after 3 failures', async () => {
    // A missing credential is no guess: it does not count.
    for (let i = 0; i < 5; i++) await request(api.app).get('/admin/deliveries').expect(401);
    await api.admin('get', '/deliveries').expect(200);

    await request(api.app).get('/admin/deliveries').set('Authorization', 'Bearer wrong-admin-token').expect(401);
    await request(api.app).post('/internal/events').set('Authorization', 'Bearer wrong-ingest-token').send({}).expect(401);
    await request(api.app).get('/admin/queues/api/queues').set('Authorization', basic('admin', 'wrong')).expect(401);

    const answers = [
      await api.admin('get', '/deliveries'),
      await api.ingest({}),
      await request(api.app).get('/admin/queues/api/queues').set('Authorization', basic(api.config.dashboard.username, api.config.dashboard.password)),
    ];
    for (const res of answers) {
      expect(res.status).toBe(429);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(500);
      expect(res.body).toMatchObject({ status: 429, type: '/problems/too_many_failed_authentications' });
      for (const secret of [api.config.adminToken, api.config.ingestToken, api.config.dashboard.password]) expect(res.text).not.toContain(secret);
    }
  });
});

describe('wrong API keys with AUTH_FAILURES_PER_ADDRESS=2', () => {
  const api = createTestApi({ AUTH_FAILURES_PER_ADDRESS: '2' });
  afterAll(() => api.close());

  it('are not counted against the address: another merchant behind it, and the platform, keep their access', async () => {
    const tenant = await api.createTenant();
    for (const key of ['not-a-key', `hk_${'z'.repeat(43)}`, `hk_${'y'.repeat(43)}`, `hk_${'x'.repeat(43)}`])
      expect((await api.listEvents(key)).status).toBe(401);
    expect((await api.listEvents(tenant.merchantKey.key)).status).toBe(200);
    expect((await api.ingest({})).status).not.toBe(429);
  });
});

describe('wrong METRICS_TOKEN tries with AUTH_FAILURES_PER_ADDRESS=3', () => {
  const api = createTestApi({ AUTH_FAILURES_PER_ADDRESS: '3', AUTH_FAILURE_WINDOW_SECONDS: '600', METRICS_TOKEN: 'metrics-token-0123456789' });
  afterAll(() => api.close());

  it('count in the same table as the other credentials: after 3, /metrics and the admin API answer 429 from that address', async () => {
    for (let i = 0; i < 3; i++) await request(api.app).get('/metrics').set('Authorization', `Bearer wrong-metrics-token-${i}`).expect(401);
    const metrics = await request(api.app).get('/metrics').set('Authorization', 'Bearer metrics-token-0123456789');
    expect(metrics.status).toBe(429);
    expect(metrics.headers['content-type']).toBe('application/problem+json');
    expect(Number(metrics.headers['retry-after'])).toBeGreaterThan(500);
    expect((await api.admin('get', '/deliveries')).status).toBe(429);
  });
});
