import type { Request } from 'express';
import request from 'supertest';
import { clientKey, createFailedAuthThrottle } from '../src/auth/failed-auth-throttle';
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

describe('createFailedAuthThrottle', () => {
  const from = (ip: string) => ({ ip, socket: {} }) as unknown as Request;
  const options = { perAddress: 2, windowSeconds: 10, maxAddresses: 3 };

  it('refuses an address after perAddress failures until its window ends', () => {
    let clock = 0;
    const throttle = createFailedAuthThrottle({ ...options, now: () => clock });
    throttle.failed(from('192.0.2.1'));
    throttle.check(from('192.0.2.1'));
    throttle.failed(from('192.0.2.1'));
    expect(() => throttle.check(from('192.0.2.1'))).toThrow(expect.objectContaining({ status: 429, headers: { 'Retry-After': '10' } }));
    throttle.check(from('192.0.2.2'));
    clock = 9_001;
    expect(() => throttle.check(from('192.0.2.1'))).toThrow(expect.objectContaining({ headers: { 'Retry-After': '1' } }));
    clock = 10_000;
    throttle.check(from('192.0.2.1'));
  });

  it('holds at most maxAddresses, and drops expired windows as it goes', () => {
    let clock = 0;
    const throttle = createFailedAuthThrottle({ ...options, now: () => clock });
    for (let i = 0; i < 1_000; i++) throttle.failed(from(`198.51.100.${i % 256}`));
    expect(throttle.size()).toBe(3);
    clock = 10_000;
    throttle.failed(from('203.0.113.9'));
    expect(throttle.size()).toBe(1);
  });

  it('counts an IPv6 address by its /64 network, and an IPv4-mapped address as IPv4', () => {
    expect(clientKey(from('2001:db8:1:2:aaaa::1'))).toBe(clientKey(from('2001:db8:1:2:ffff:ffff:ffff:ffff')));
    expect(clientKey(from('2001:db8:1:3::1'))).not.toBe(clientKey(from('2001:db8:1:2::1')));
    expect(clientKey(from('::ffff:192.0.2.7'))).toBe('192.0.2.7');
    const throttle = createFailedAuthThrottle({ ...options });
    throttle.failed(from('2001:db8::1'));
    throttle.failed(from('2001:db8::2'));
    expect(() => throttle.check(from('2001:db8::3'))).toThrow(expect.objectContaining({ status: 429 }));
  });
});
