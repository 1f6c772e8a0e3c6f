import { createTestApi } from './support/api';
import { ingestEvent } from './support/events';

const api = createTestApi();
afterAll(() => api.close());

// RFC 3339 allows each of these, yet none is an instant both PostgreSQL and JavaScript can hold
// and write back as RFC 3339: a leap second, year 0000, and year 10000 reached through an offset.
const UNREPRESENTABLE = ['2026-06-30T23:59:60Z', '0000-01-01T00:00:00Z', '9999-12-31T23:59:59-23:59'];

function expectProblemNaming(res: { status: number; headers: Record<string, string>; body: { errors?: unknown } }, name: Record<string, string>) {
  expect(res.status).toBe(400);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body.errors).toEqual([expect.objectContaining({ ...name, message: expect.stringContaining('RFC 3339 date-time') })]);
}

describe('date-times the API cannot store', () => {
  let tenant: Awaited<ReturnType<typeof api.createTenant>>;
  beforeAll(async () => {
    tenant = await api.createTenant();
  });

  describe.each(UNREPRESENTABLE)('%s', (value) => {
    it.each(['createdFrom', 'createdTo'])('is refused in GET /events?%s with 400 naming the parameter', async (parameter) => {
      expectProblemNaming(await api.listEvents(tenant.merchantKey.key, { [parameter]: value }), { parameter });
    });

    it('is refused as an ingested createdAt with 400 naming the field', async () => {
      expectProblemNaming(await api.ingest(ingestEvent(tenant, { createdAt: value })), { pointer: '/createdAt' });
    });

    it.each(['createdFrom', 'createdTo'])('is refused in GET /admin/deliveries?%s with 400 naming the parameter', async (parameter) => {
      expectProblemNaming(await api.admin('get', `/deliveries?${parameter}=${encodeURIComponent(value)}`), { parameter });
    });

    it.each(['createdFrom', 'createdTo'])('is refused as a bulk replay %s with 400 naming the field', async (field) => {
      expectProblemNaming(await api.admin('post', '/deliveries/replay').send({ merchantId: tenant.merchantId, [field]: value }), {
        pointer: `/${field}`,
      });
    });
  });

  it('still accepts the extremes that are representable, and an offset that stays within year 9999', async () => {
    for (const value of ['0001-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59+01:00']) {
      const res = await api.listEvents(tenant.merchantKey.key, { createdFrom: value });
      expect(res.status).toBe(200);
    }
    await api.ingest(ingestEvent(tenant, { createdAt: '0001-01-01T00:00:00Z' })).expect(201);
  });
});
