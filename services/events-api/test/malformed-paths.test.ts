import request from 'supertest';
import { createTestApi } from './support/api';

const DASHBOARD = { DASHBOARD_USERNAME: 'ops', DASHBOARD_PASSWORD: 'dashboard-password-for-path-tests' };
const api = createTestApi(DASHBOARD);
afterAll(() => api.close());

// Every route with a path parameter, written with {} where the parameter goes, and 404 routes too.
const ROUTES: Array<['get' | 'post' | 'put' | 'delete', string]> = [
  ['get', '/admin/deliveries/{}'],
  ['post', '/admin/deliveries/{}/replay'],
  ['get', '/admin/events/{}/deliveries'],
  ['delete', '/admin/api-keys/{}'],
  ['get', '/admin/programs/{}/notification-target'],
  ['put', '/admin/merchants/{}/notification-target'],
  ['delete', '/admin/merchants/{}/notification-target'],
  ['put', '/admin/queues/api/queues/{}/pause'],
  ['get', '/admin/no-such-route/{}'],
];

// Not percent-encoded UTF-8: a truncated sequence, a lone 0xFF, an encoded UTF-16 surrogate,
// a bare `%`; and NUL, which decodes but which PostgreSQL cannot hold in text.
const SEGMENTS = ['%E0%A4%A', '%ff', '%ED%A0%80', 'a%', '%00', 'evt-%00-x'];

function send(method: (typeof ROUTES)[number][0], path: string) {
  const credentials = path.startsWith('/admin/queues')
    ? `Basic ${Buffer.from(`${DASHBOARD.DASHBOARD_USERNAME}:${DASHBOARD.DASHBOARD_PASSWORD}`).toString('base64')}`
    : `Bearer ${api.config.adminToken}`;
  return request(api.app)[method](path).set('Authorization', credentials);
}

describe('a path parameter that is malformed or holds NUL', () => {
  describe.each(SEGMENTS)('%s', (segment) => {
    it.each(ROUTES)('answers %s %s with 400 problem+json naming the segment', async (method, route) => {
      const res = await send(method, route.replace('{}', segment));
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 400, type: '/problems/malformed_path' });
      expect(res.body.errors).toEqual([expect.objectContaining({ segment })]);
    });
  });

  it('is refused before authentication too, with the same problem', async () => {
    const res = await request(api.app).get('/admin/deliveries/%ff');
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('/problems/malformed_path');
  });

  it('leaves well-formed encodings alone: a percent-encoded id is looked up as decoded', async () => {
    const res = await send('get', '/admin/deliveries/%E2%82%AC-not-a-delivery');
    expect(res.status).toBe(404);
    expect(res.body.detail).toContain('€-not-a-delivery');
  });
});
