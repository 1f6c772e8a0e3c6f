import request from 'supertest';
import { createTestApi } from './support/api';

const api = createTestApi({ SIGNING_SECRET_ROTATION_GRACE_SECONDS: '3600' });
const noGrace = createTestApi({ SIGNING_SECRET_ROTATION_GRACE_SECONDS: '0' });
afterAll(() => Promise.all([api.close(), noGrace.close()]));

type Owner = { programId: string } | { merchantId: string };
type Api = typeof api;

const ownerPath = (owner: Owner) => ('merchantId' in owner ? `/merchants/${owner.merchantId}` : `/programs/${owner.programId}`);

async function putTarget(owner: Owner, on: Api = api) {
  const res = await on.admin('put', `${ownerPath(owner)}/notification-target`).send({ url: 'https://merchant.example/hooks', auth: { mode: 'none' } });
  expect(res.status).toBe(200);
  return res.body as { id: string };
}

const read = (owner: Owner, on: Api = api) => on.admin('get', `${ownerPath(owner)}/notification-target/signing-secret`);
const rotate = (owner: Owner, on: Api = api) => on.admin('post', `${ownerPath(owner)}/notification-target/signing-secret/rotate`);

describe('GET and POST …/notification-target/signing-secret', () => {
  describe.each(['program', 'merchant'] as const)('for a %s target', (kind) => {
    it('shows the secret the target was created with, uncached, and the same on every read', async () => {
      const tenant = await api.createTenant();
      const owner = kind === 'program' ? { programId: tenant.programId } : { merchantId: tenant.merchantId };
      const target = await putTarget(owner);

      const res = await read(owner);
      expect(res.status).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.body).toEqual({ targetId: target.id, secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/), previousSecretExpiresAt: null });
      expect((await read(owner)).body.secret).toBe(res.body.secret);
    });

    it('rotates to a new secret and says until when the replaced one still signs', async () => {
      const tenant = await api.createTenant();
      const owner = kind === 'program' ? { programId: tenant.programId } : { merchantId: tenant.merchantId };
      await putTarget(owner);
      const before = (await read(owner)).body.secret;

      const started = Date.now();
      const res = await rotate(owner);
      expect(res.status).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.body.secret).toMatch(/^whsec_/);
      expect(res.body.secret).not.toBe(before);
      const expiresAt = Date.parse(res.body.previousSecretExpiresAt);
      expect(expiresAt).toBeGreaterThanOrEqual(started + 3_600_000 - 1_000);
      expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3_600_000 + 1_000);
      expect((await read(owner)).body).toEqual(res.body);
    });
  });

  it('drops the replaced secret at once when SIGNING_SECRET_ROTATION_GRACE_SECONDS is 0', async () => {
    const { programId } = await noGrace.createTenant();
    await putTarget({ programId }, noGrace);
    const res = await rotate({ programId }, noGrace);
    expect(res.status).toBe(200);
    expect(res.body.previousSecretExpiresAt).toBeNull();
  });

  it('answers 404 problem+json for an owner without a target, an unknown one and a deleted target', async () => {
    const { programId } = await api.createTenant();
    for (const res of [
      await read({ programId }),
      await rotate({ programId }),
      await read({ merchantId: 'nobody-here' }),
      await rotate({ merchantId: 'nobody-here' }),
    ]) {
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
    await putTarget({ programId });
    expect((await api.admin('delete', `/programs/${programId}/notification-target`)).status).toBe(204);
    expect((await read({ programId })).status).toBe(404);
  });

  it('refuses a request without the admin token', async () => {
    const { programId } = await api.createTenant();
    await putTarget({ programId });
    expect((await request(api.app).get(`/admin/programs/${programId}/notification-target/signing-secret`)).status).toBe(401);
    const ingestToken = await request(api.app)
      .post(`/admin/programs/${programId}/notification-target/signing-secret/rotate`)
      .set('Authorization', `Bearer ${api.config.ingestToken}`);
    expect(ingestToken.status).toBe(401);
  });

  it('is shown by these endpoints only: not by the target, nor in the logs', async () => {
    const { programId } = await api.createTenant();
    const put = await api.admin('put', `/programs/${programId}/notification-target`).send({ url: 'https://merchant.example/hooks', auth: { mode: 'none' } });
    const secrets = [(await read({ programId })).body.secret, (await rotate({ programId })).body.secret];
    const get = await api.admin('get', `/programs/${programId}/notification-target`);
    for (const secret of secrets) {
      for (const text of [put.text, get.text, api.logs()]) expect(text).not.toContain(secret.slice('whsec_'.length));
    }
  });
});
