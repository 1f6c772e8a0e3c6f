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
    expect(res.body.errors).toEqual(
      expect.arrayContaining([expect.objectContaining({ pointer: '/name' }), expect.objectContaining({ pointer: '/colour' })]),
    );
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
