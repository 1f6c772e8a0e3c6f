import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { createTestApi } from './support/api';

// Every API answer holds one tenant's data or an operator's, chosen by a header (x-api-key, a
// bearer token) that a shared cache does not key on: none may be stored, by any cache.
const api = createTestApi();
afterAll(() => api.close());

/** No cache may store it, and no validator invites a conditional request. */
function expectUncached(res: request.Response): void {
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers.etag).toBeUndefined();
}

describe('caching of API answers', () => {
  it('GET /events: a page and a refusal are no-store', async () => {
    const tenant = await api.createTenant();
    const page = await api.listEvents(tenant.merchantKey.key);
    expect(page.status).toBe(200);
    expectUncached(page);
    const refused = await api.listEvents(undefined);
    expect(refused.status).toBe(401);
    expectUncached(refused);
  });

  it('the admin API: a read is no-store', async () => {
    await api.createTenant();
    const res = await api.admin('get', '/programs');
    expect(res.status).toBe(200);
    expectUncached(res);
  });

  it('the ingest API: an accepted event is no-store', async () => {
    const tenant = await api.createTenant();
    const res = await api.ingest({
      id: `Event-${randomUUID()}`,
      programId: tenant.programId,
      origin: 'api',
      eventType: 'created',
      objectId: 'o-1',
      objectType: 'payment',
    });
    expect(res.status).toBe(201);
    expectUncached(res);
  });

  it("the API reference's static assets stay cacheable", async () => {
    const res = await request(api.app).get('/docs/swagger-ui.css');
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('public, max-age=3600');
  });
});
