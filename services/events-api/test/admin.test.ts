import request from 'supertest';
import { createTestApi } from './support/api';

const api = createTestApi();
afterAll(() => api.close());

describe('admin bootstrap', () => {
  it('refuses a request without the admin token with 401 problem+json', async () => {
    const res = await request(api.app).post('/admin/programs').send({ name: 'x' });
    expect(res.status).toBe(401);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
  });

  it('refuses the ingest token on the admin API', async () => {
    const res = await request(api.app).post('/admin/programs').set('Authorization', `Bearer ${api.config.ingestToken}`).send({ name: 'x' });
    expect(res.status).toBe(401);
    expect(res.body.detail).toContain('Authorization: Bearer $ADMIN_TOKEN');
  });

  it('creates a program with a generated id, or with the given one', async () => {
    const generated = await api.admin('post', '/programs').send({ name: 'Acme Wallet' });
    expect(generated.status).toBe(201);
    expect(generated.body).toMatchObject({ id: expect.any(String), name: 'Acme Wallet', createdAt: expect.any(String) });

    const id = `prg_${Date.now()}`;
    const given = await api.admin('post', '/programs').send({ id, name: 'Given' });
    expect(given.status).toBe(201);
    expect(given.body.id).toBe(id);
    expect((await api.admin('post', '/programs').send({ id, name: 'Again' })).status).toBe(409);
  });

  it('rejects a bad body with 400 naming the field', async () => {
    const res = await api.admin('post', '/programs').send({ name: '', colour: 'red' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ pointer: '/name' }), expect.objectContaining({ pointer: '/colour' })]));
  });

  it('rejects malformed JSON with 400 problem+json', async () => {
    const res = await api.admin('post', '/programs').set('Content-Type', 'application/json').send('{"name":');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: '/problems/malformed_json' });
  });

  it('creates a merchant only in an existing program', async () => {
    const missing = await api.admin('post', '/merchants').send({ programId: 'no-such-program', name: 'M' });
    expect(missing.status).toBe(422);
    expect(missing.body.errors).toEqual([{ pointer: '/programId', message: 'does not exist' }]);
  });

  it('returns an API key once and stores only its hash', async () => {
    const tenant = await api.createTenant();
    expect(tenant.merchantKey.key).toMatch(/^hk_[A-Za-z0-9_-]{43}$/);
    const stored = await api.prisma.apiKey.findUniqueOrThrow({ where: { id: tenant.merchantKey.id } });
    expect(JSON.stringify(stored)).not.toContain(tenant.merchantKey.key);
    expect(stored.keyHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('asks for exactly one of merchantId and programId for a key', async () => {
    const tenant = await api.createTenant();
    const both = await api.admin('post', '/api-keys').send({ merchantId: tenant.merchantId, programId: tenant.programId });
    expect(both.status).toBe(400);
    expect((await api.admin('post', '/api-keys').send({})).status).toBe(400);
    expect((await api.admin('post', '/api-keys').send({ merchantId: 'nobody' })).status).toBe(422);
  });

  it('revokes a key so that GET /events refuses it', async () => {
    const tenant = await api.createTenant();
    expect((await api.listEvents(tenant.merchantKey.key)).status).toBe(200);
    const revoked = await api.admin('delete', `/api-keys/${tenant.merchantKey.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.revokedAt).toEqual(expect.any(String));
    expect(revoked.body).not.toHaveProperty('key');
    expect((await api.listEvents(tenant.merchantKey.key)).status).toBe(401);
    expect((await api.admin('delete', '/api-keys/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await api.admin('delete', '/api-keys/not-a-uuid')).status).toBe(404);
  });
});

describe('admin lists', () => {
  it('lists programs oldest first, with paging', async () => {
    const first = await api.createTenant();
    const second = await api.createTenant();
    // Other test files add programs to the same database meanwhile: read every page, then look.
    const ids: string[] = [];
    for (let page = 1; ; page += 1) {
      const res = await api.admin('get', `/programs?page=${page}&pageSize=100`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ page, pageSize: 100, count: expect.any(Number), totalPages: expect.any(Number) });
      ids.push(...res.body.data.map((p: { id: string }) => p.id));
      if (res.body.data.length < 100) break;
    }
    expect(ids.indexOf(first.programId)).toBeGreaterThanOrEqual(0);
    expect(ids.indexOf(second.programId)).toBeGreaterThan(ids.indexOf(first.programId));
    const one = await api.admin('get', '/programs?pageSize=1');
    expect(one.body.data).toEqual([{ id: expect.any(String), name: expect.any(String), createdAt: expect.any(String) }]);
  });

  it("lists a program's merchants", async () => {
    const tenant = await api.createTenant();
    const other = await api.admin('post', '/merchants').send({ programId: tenant.programId, name: 'Second shop' }).expect(201);
    const res = await api.admin('get', `/merchants?programId=${tenant.programId}`);
    expect(res.body).toMatchObject({ count: 2, totalPages: 1 });
    expect(res.body.data.map((m: { id: string }) => m.id)).toEqual([tenant.merchantId, other.body.id]);
    expect((await api.admin('get', '/merchants?programId=no%20such')).status).toBe(400);
  });

  it('lists keys by merchant or program, newest first, revoked ones with revokedAt, never the key or its hash', async () => {
    const tenant = await api.createTenant();
    await api.admin('delete', `/api-keys/${tenant.merchantKey.id}`).expect(200);
    const ofMerchant = await api.admin('get', `/api-keys?merchantId=${tenant.merchantId}`);
    expect(ofMerchant.body).toMatchObject({ count: 1, data: [{ id: tenant.merchantKey.id, merchantId: tenant.merchantId, revokedAt: expect.any(String) }] });
    const ofProgram = await api.admin('get', `/api-keys?programId=${tenant.programId}`);
    expect(ofProgram.body.count).toBe(2);
    expect(ofProgram.body.data.map((k: { id: string }) => k.id)).toEqual([tenant.programKey.id, tenant.merchantKey.id]);
    const text = JSON.stringify(ofProgram.body);
    expect(text).not.toContain(tenant.programKey.key);
    expect(text).not.toMatch(/keyHash|key_hash/);
  });

  it('refuses a bad paging parameter with 400 naming it', async () => {
    const res = await api.admin('get', '/api-keys?pageSize=500');
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ parameter: 'pageSize' })]);
  });
});
