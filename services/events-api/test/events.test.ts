import request from 'supertest';
import { signingSecretPaths } from '../src/openapi/callbacks';
import { createTestApi } from './support/api';
import { ingestEvent, seconds } from './support/events';

const api = createTestApi();
afterAll(() => api.close());

type Page = { page: number; pageSize: number; count: number; totalPages: number; data: Array<{ id: string } & Record<string, unknown>> };

async function page(key: string, query: Record<string, string | number> = {}): Promise<Page> {
  const res = await api.listEvents(key, query);
  expect(res.status).toBe(200);
  return res.body as Page;
}

describe('GET /events', () => {
  describe('authentication', () => {
    it('rejects a request without x-api-key with 401 problem+json', async () => {
      const res = await api.listEvents(undefined);
      expect(res.status).toBe(401);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 401, header: 'x-api-key' });
    });

    it('rejects an unknown key with 401', async () => {
      expect((await api.listEvents('hk_unknown')).status).toBe(401);
    });
  });

  describe('required headers', () => {
    let key: string;
    beforeAll(async () => {
      key = (await api.createTenant()).merchantKey.key;
    });

    it.each([
      ['Content-Type', undefined],
      ['Content-Type', 'text/plain'],
      ['Accept-Language', undefined],
      ['Accept-Language', 'de-DE'],
      ['Accept-Language', 'en'],
      ['Origin', undefined],
      ['Origin', 'not an origin'],
      ['User-Agent', undefined],
    ])('rejects %s = %s with 400 naming the header', async (header, value) => {
      const res = await api.listEvents(key, {}, { [header]: value });
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.errors).toEqual([expect.objectContaining({ header })]);
    });

    it('accepts Content-Type with a charset and en-US in any case', async () => {
      const res = await api.listEvents(key, {}, { 'Content-Type': 'application/json; charset=utf-8', 'Accept-Language': 'en-us' });
      expect(res.status).toBe(200);
    });
  });

  describe('query parameters', () => {
    let key: string;
    beforeAll(async () => {
      key = (await api.createTenant()).merchantKey.key;
    });

    it.each([
      ['page', '0'],
      ['page', '-1'],
      ['page', 'abc'],
      ['page', '1.5'],
      ['pageSize', '0'],
      ['pageSize', '101'],
      ['origin', 'fax'],
      ['objectType', 'subscriptions'],
      ['eventType', 'exploded'],
      ['createdFrom', 'yesterday'],
      ['objectId', ''],
      ['colour', 'red'],
    ])('rejects %s=%s with 400 naming the parameter', async (parameter, value) => {
      const res = await api.listEvents(key, { [parameter]: value });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([expect.objectContaining({ parameter })]);
    });

    it('suggests the known name for a misspelt parameter and lists the allowed values of an enum', async () => {
      const res = await api.listEvents(key, { page_size: '5', origin: 'fax' });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([
        { parameter: 'page_size', message: 'is not an allowed property (did you mean pageSize?)' },
        { parameter: 'origin', message: 'must be one of: api, widget, automated' },
      ]);
      expect(res.body.detail).toContain('did you mean pageSize?');
    });

    it.each([
      ['page=-1', 'page', 'must be a whole number from 1 to 999999999; got "-1", a negative number'],
      ['pageSize=-1', 'pageSize', 'must be a whole number from 1 to 100; got "-1", a negative number'],
      ['pageSize=500', 'pageSize', 'must be a whole number from 1 to 100; got 500'],
      ['page=1.5', 'page', 'must be a whole number from 1 to 999999999; got "1.5", not a whole number'],
      ['page=', 'page', 'is empty: give a whole number from 1 to 999999999, or leave page out for 1'],
      ['page=1&page=2', 'page', 'was given 2 times (page=1&page=2): give it once'],
    ])('answers %s with the parameter, the reason and what to send instead', async (queryString, parameter, message) => {
      const res = await request(api.app)
        .get(`/events?${queryString}`)
        .set({ 'x-api-key': key, 'Content-Type': 'application/json', 'Accept-Language': 'en-US', Origin: 'https://a.example', 'User-Agent': 't' });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([{ parameter, message }]);
      expect(res.body.detail).toBe(`Invalid query parameter: ${parameter} ${message}.`);
    });

    it('rejects a repeated parameter', async () => {
      const res = await request(api.app)
        .get('/events?page=1&page=2')
        .set({ 'x-api-key': key, 'Content-Type': 'application/json', 'Accept-Language': 'en-US', Origin: 'https://a.example', 'User-Agent': 't' });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([expect.objectContaining({ parameter: 'page' })]);
    });
  });

  describe('paging', () => {
    it('gives an empty page for a tenant with no events', async () => {
      const tenant = await api.createTenant();
      expect(await page(tenant.merchantKey.key)).toEqual({ page: 1, pageSize: 20, count: 0, totalPages: 0, data: [] });
    });

    it('computes totalPages for an exact multiple, a partial last page and a page past the end', async () => {
      const tenant = await api.createTenant();
      const times = seconds(10);
      const events = times.map((createdAt) => ingestEvent(tenant, { createdAt }));
      await api.ingest({ events }).expect(201);
      const ids = events.map((e) => e.id);

      const exact = await page(tenant.merchantKey.key, { pageSize: 5, page: 2 });
      expect(exact).toMatchObject({ page: 2, pageSize: 5, count: 10, totalPages: 2 });
      expect(exact.data.map((e) => e.id)).toEqual(ids.slice(5, 10));

      const partial = await page(tenant.merchantKey.key, { pageSize: 4, page: 3 });
      expect(partial).toMatchObject({ count: 10, totalPages: 3 });
      expect(partial.data.map((e) => e.id)).toEqual(ids.slice(8));

      const past = await page(tenant.merchantKey.key, { pageSize: 4, page: 4 });
      expect(past).toEqual({ page: 4, pageSize: 4, count: 10, totalPages: 3, data: [] });

      expect((await page(tenant.merchantKey.key)).pageSize).toBe(20);
    });

    it('orders by (createdAt, id) oldest first, and earlier pages stay put while newer events arrive', async () => {
      const tenant = await api.createTenant();
      const sameTime = '2026-02-01T00:00:00.000Z';
      const tied = [ingestEvent(tenant, { createdAt: sameTime }), ingestEvent(tenant, { createdAt: sameTime }), ingestEvent(tenant, { createdAt: sameTime })];
      const older = ingestEvent(tenant, { createdAt: '2026-01-01T00:00:00.000Z' });
      await api.ingest({ events: [...tied, older] }).expect(201);
      const expected = [older.id, ...tied.map((e) => e.id).sort()];

      const first = await page(tenant.merchantKey.key, { pageSize: 2 });
      expect(first.data.map((e) => e.id)).toEqual(expected.slice(0, 2));

      await api.ingest(ingestEvent(tenant, { createdAt: '2026-03-01T00:00:00.000Z' })).expect(201);
      const again = await page(tenant.merchantKey.key, { pageSize: 2 });
      expect(again.data.map((e) => e.id)).toEqual(expected.slice(0, 2));
      expect(again.count).toBe(5);
    });
  });

  describe('filters', () => {
    it('maps objectType=plan to events whose objectType is subscription.plan, and accepts subscription.plan too', async () => {
      const tenant = await api.createTenant();
      const plan = ingestEvent(tenant, { objectType: 'subscription.plan' });
      await api.ingest({ events: [plan, ingestEvent(tenant, { objectType: 'subscription' })] }).expect(201);
      for (const objectType of ['plan', 'subscription.plan']) {
        const res = await page(tenant.merchantKey.key, { objectType });
        expect(res.count).toBe(1);
        expect(res.data.map((e) => e.id)).toEqual([plan.id]);
        expect(res.data[0]!.objectType).toBe('subscription.plan');
      }
    });

    it('filters by origin and objectType together with an exact count', async () => {
      const tenant = await api.createTenant();
      const match = ingestEvent(tenant, { origin: 'widget', objectType: 'refund' });
      await api.ingest({
        events: [match, ingestEvent(tenant, { origin: 'widget', objectType: 'payment' }), ingestEvent(tenant, { origin: 'api', objectType: 'refund' })],
      });
      const res = await page(tenant.merchantKey.key, { origin: 'widget', objectType: 'refund' });
      expect(res.count).toBe(1);
      expect(res.data.map((e) => e.id)).toEqual([match.id]);
      expect((await page(tenant.merchantKey.key, { origin: 'widget' })).count).toBe(2);
      expect((await page(tenant.merchantKey.key, { objectType: 'refund' })).count).toBe(2);
    });

    it('follows one object through its life with objectId, and filters by eventType and time (extensions)', async () => {
      const tenant = await api.createTenant();
      const [t1, t2, t3] = seconds(3);
      const life = [
        ingestEvent(tenant, { objectId: 'sub-1', eventType: 'created', createdAt: t1 }),
        ingestEvent(tenant, { objectId: 'sub-1', eventType: 'updated', createdAt: t2 }),
        ingestEvent(tenant, { objectId: 'sub-1', eventType: 'deleted', createdAt: t3 }),
      ];
      await api.ingest({ events: [...life, ingestEvent(tenant, { objectId: 'sub-2' })] }).expect(201);

      const object = await page(tenant.merchantKey.key, { objectId: 'sub-1' });
      expect(object.data.map((e) => e.eventType)).toEqual(['created', 'updated', 'deleted']);
      expect(object.count).toBe(3);
      expect((await page(tenant.merchantKey.key, { objectId: 'sub-1', eventType: 'updated' })).count).toBe(1);
      const window = await page(tenant.merchantKey.key, { createdFrom: t2!, createdTo: t3! });
      expect(window.data.map((e) => e.id)).toEqual([life[1]!.id]);
    });
  });

  describe('tenant isolation', () => {
    it("shows a merchant key only its merchant's events and a program key every event of its program", async () => {
      const a = await api.createTenant();
      const otherMerchant = (await api.admin('post', '/merchants').send({ programId: a.programId, name: 'Other' }).expect(201)).body as { id: string };
      const b = await api.createTenant();
      const mine = ingestEvent(a);
      const sibling = ingestEvent({ programId: a.programId, merchantId: otherMerchant.id });
      const programWide = ingestEvent({ programId: a.programId });
      const foreign = ingestEvent(b);
      await api.ingest({ events: [mine, sibling, programWide] }).expect(201);
      await api.ingest(foreign).expect(201);

      expect((await page(a.merchantKey.key)).data.map((e) => e.id)).toEqual([mine.id]);
      expect((await page(a.programKey.key)).data.map((e) => e.id).sort()).toEqual([mine.id, sibling.id, programWide.id].sort());
      expect((await page(a.programKey.key)).count).toBe(3);
      expect((await page(b.merchantKey.key)).data.map((e) => e.id)).toEqual([foreign.id]);
      expect((await page(a.merchantKey.key, { objectId: foreign.objectId })).count).toBe(0);
    });
  });

  describe("an object's events after a sequence number (afterSequence)", () => {
    it('lists the events of one object whose sequence is greater, in sequence order, in the page envelope', async () => {
      const tenant = await api.createTenant();
      const objectId = `obj-${crypto.randomUUID()}`;
      // Created in the opposite order to the one they were stored in: the sequence follows the storing.
      const [late, early] = seconds(2);
      const events = [0, 1, 2, 3, 4].map((n) => ingestEvent(tenant, { objectId, createdAt: n % 2 === 0 ? late : early, eventType: 'updated' }));
      await api.ingest({ events: events.slice(0, 3) }).expect(201);
      await api.ingest({ events: [...events.slice(3), ingestEvent(tenant), ingestEvent(tenant, { objectId, objectType: 'refund' })] }).expect(201);

      const after2 = await page(tenant.merchantKey.key, { objectType: 'payment', objectId, afterSequence: 2 });
      expect(after2).toMatchObject({ page: 1, pageSize: 20, count: 3, totalPages: 1 });
      expect(after2.data.map((e) => [e.id, e.sequence])).toEqual([
        [events[2]!.id, 3],
        [events[3]!.id, 4],
        [events[4]!.id, 5],
      ]);
      const all = await page(tenant.merchantKey.key, { objectType: 'payment', objectId, afterSequence: 0, pageSize: 2, page: 2 });
      expect(all).toMatchObject({ count: 5, totalPages: 3 });
      expect(all.data.map((e) => e.sequence)).toEqual([3, 4]);
      expect((await page(tenant.merchantKey.key, { objectType: 'payment', objectId, afterSequence: 5 })).count).toBe(0);
      // Another tenant's key sees none of them.
      const other = await api.createTenant();
      expect((await page(other.merchantKey.key, { objectType: 'payment', objectId, afterSequence: 0 })).count).toBe(0);
    });

    it.each([
      [{ afterSequence: '1' }, ['objectType', 'objectId']],
      [{ afterSequence: '1', objectId: 'o-1' }, ['objectType']],
      [{ afterSequence: '1', objectType: 'payment' }, ['objectId']],
    ])('refuses afterSequence without the object named whole (%j) with 400 naming what is missing', async (query, missing) => {
      const res = await api.listEvents((await api.createTenant()).merchantKey.key, query);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.errors).toEqual(missing.map((parameter) => ({ parameter, message: expect.stringContaining('is required with afterSequence') })));
    });

    it.each(['-1', 'x', '1.5', '2147483648'])('refuses afterSequence=%s with 400 naming it', async (value) => {
      const res = await api.listEvents((await api.createTenant()).merchantKey.key, { objectType: 'payment', objectId: 'o-1', afterSequence: value });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([expect.objectContaining({ parameter: 'afterSequence' })]);
    });
  });

  it('leaves optional fields that were not set absent, not null', async () => {
    const tenant = await api.createTenant();
    await api.ingest(ingestEvent(tenant)).expect(201);
    const [event] = (await page(tenant.merchantKey.key)).data;
    expect(Object.keys(event!).sort()).toEqual(['createdAt', 'eventType', 'id', 'objectId', 'objectType', 'origin', 'sequence']);
  });
});

describe('GET /events rate limit', () => {
  const limited = createTestApi({ RATE_LIMIT_REQUESTS: '2', RATE_LIMIT_WINDOW_SECONDS: '60' });
  afterAll(() => limited.close());

  it('answers 429 with Retry-After past the limit of a key, without touching other keys', async () => {
    const tenant = await limited.createTenant();
    expect((await limited.listEvents(tenant.merchantKey.key)).status).toBe(200);
    expect((await limited.listEvents(tenant.merchantKey.key)).status).toBe(200);
    const third = await limited.listEvents(tenant.merchantKey.key);
    expect(third.status).toBe(429);
    expect(third.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
    expect((await limited.listEvents(tenant.programKey.key)).status).toBe(200);
  });
});

describe('GET /openapi.json', () => {
  it("describes the merchant API in OpenAPI 3.1 with the spec's schemas", async () => {
    const res = await request(api.app).get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.paths['/events'].get.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['Accept-Language', 'Origin', 'User-Agent', 'origin', 'page', 'pageSize', 'objectType']),
    );
    expect(res.body.components.schemas.Event.properties.objectType.enum).toContain('subscription.plan');
    expect(JSON.stringify(res.body)).not.toContain('https://herald.example/schemas/');
  });

  it('describes the callback merchants receive, with the Standard Webhooks headers that sign it', async () => {
    const res = await request(api.app).get('/openapi.json');
    const callback = res.body.webhooks.eventNotification.post;
    const required = callback.parameters.filter((p: { required: boolean }) => p.required).map((p: { name: string }) => p.name);
    expect(required).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature']);
    // An event, or a test callback (marked by the optional herald-test header).
    const refs = callback.requestBody.content['application/json'].schema.oneOf.map((s: { $ref: string }) => s.$ref.replace('#/components/schemas/', ''));
    expect(refs).toEqual(['Event', 'TestCallback']);
    for (const name of refs) expect(res.body.components.schemas[name]).toBeDefined();
  });
});

describe('the admin signing-secret paths for an OpenAPI document', () => {
  it('name every route the signing-secret router serves', () => {
    const paths = signingSecretPaths() as Record<string, { get?: unknown; post?: unknown }>;
    expect(Object.keys(paths).sort()).toEqual([
      '/admin/merchants/{merchantId}/notification-target/signing-secret',
      '/admin/merchants/{merchantId}/notification-target/signing-secret/rotate',
      '/admin/programs/{programId}/notification-target/signing-secret',
      '/admin/programs/{programId}/notification-target/signing-secret/rotate',
    ]);
    expect(Object.entries(paths).map(([path, item]) => [path.endsWith('/rotate'), Boolean(item.get), Boolean(item.post)])).toEqual(
      Object.keys(paths).map((path) => (path.endsWith('/rotate') ? [true, false, true] : [false, true, false])),
    );
  });
});
