import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { createRedisConnection, createTargetGate, pingRedis } from '@herald/queue';
import { closedPort } from '@herald/testing';
import { createTestApi, type TestApi } from './support/api';
import { expectDocumented, type OpenApiDocument } from './support/openapi';

const DAY = 86_400_000;
const api = createTestApi();
let document: OpenApiDocument;
beforeAll(async () => {
  document = (await request(api.app).get('/openapi.json').expect(200)).body;
});
afterAll(() => api.close());

type Tenant = Awaited<ReturnType<TestApi['createTenant']>>;

/** A fresh tenant whose program target uses basic auth and a token in its URL, and whose merchant target has none. */
async function scene(on: TestApi = api): Promise<Tenant & { programTarget: string; merchantTarget: string; password: string; token: string }> {
  const tenant = await on.createTenant();
  const password = `pw-${randomUUID()}`;
  const token = `tok-${randomUUID()}`;
  const program = await on
    .admin('put', `/programs/${tenant.programId}/notification-target`)
    .send({ url: `https://program.example/hooks?token=${token}&v=2`, auth: { mode: 'basic', username: `user-${token}`, password } })
    .expect(200);
  const merchant = await on
    .admin('put', `/merchants/${tenant.merchantId}/notification-target`)
    .send({ url: 'https://merchant.example/hooks', auth: { mode: 'none' }, notifications: { objectTypes: ['payment'] } })
    .expect(200);
  return { ...tenant, programTarget: program.body.id, merchantTarget: merchant.body.id, password, token };
}

const status = (key: string, on: TestApi = api) => on.merchantGet(key, '/notification-target');

/** Stores a target's health as the delivery worker would have recorded it. */
function storeHealth(targetId: string, data: { failingSince?: Date | null; lastSuccessAt?: Date | null; enabled?: boolean; disabledReason?: string | null }) {
  return api.prisma.notificationTarget.update({ where: { id: targetId }, data: { ...data, ...(data.enabled === false ? { disabledAt: new Date() } : {}) } });
}

describe('GET /notification-target', () => {
  it("shows a merchant key its merchant's target: the URL, the auth mode and a quiet health", async () => {
    const s = await scene();
    const res = await status(s.merchantKey.key).expect(200);
    expectDocumented(document, 'merchant', '/notification-target', 'get', res);
    expect(res.body).toEqual({
      url: 'https://merchant.example/hooks',
      authMode: 'none',
      notifications: { objectTypes: ['payment'] },
      enabled: true,
      ordering: 'none',
      disabledReason: null,
      disabledAt: null,
      breaker: { state: 'closed', openedAt: null, halfOpenAt: null },
      pausedUntil: null,
      window: null,
      lastSuccessAt: null,
      failingSince: null,
      autoDisableAt: null,
      warning: null,
      egressAddresses: [],
    });
  });

  it('names the addresses callbacks leave from (EGRESS_ADDRESSES), for a merchant to allow-list, and so does the admin API', async () => {
    const egress = createTestApi({ EGRESS_ADDRESSES: '203.0.113.7,2001:db8::/48' });
    try {
      const s = await scene(egress);
      const res = await status(s.merchantKey.key, egress).expect(200);
      expectDocumented(document, 'merchant', '/notification-target', 'get', res);
      expect(res.body.egressAddresses).toEqual(['203.0.113.7', '2001:db8::/48']);
      const admin = await egress.admin('get', '/egress-addresses').expect(200);
      expect(admin.body).toEqual({ addresses: ['203.0.113.7', '2001:db8::/48'] });
      await egress.admin('get', '/egress-addresses').set('Authorization', 'Bearer wrong').expect(401);
    } finally {
      await egress.close();
    }
  });

  it("shows a program key its program's own target with the query values masked and no credential, not even the user name", async () => {
    const s = await scene();
    const res = await status(s.programKey.key).expect(200);
    expect(res.body).toMatchObject({ url: 'https://program.example/hooks?token=***&v=***', authMode: 'basic', notifications: {} });
    const text = JSON.stringify(res.body);
    for (const secret of [s.password, s.token]) expect(text).not.toContain(secret);
    expect(text).not.toMatch(/username|password|\*{8}/);
    expect(api.logs()).not.toContain(s.password);
  });

  it('shows when auto-disable would switch a failing target off, and warns once it has failed for a day', async () => {
    const s = await scene();
    const failingSince = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await storeHealth(s.merchantTarget, { failingSince, lastSuccessAt: new Date(failingSince.getTime() - 60_000) });
    const fresh = await status(s.merchantKey.key).expect(200);
    expect(fresh.body).toMatchObject({
      failingSince: failingSince.toISOString(),
      lastSuccessAt: new Date(failingSince.getTime() - 60_000).toISOString(),
      // TARGET_AUTO_DISABLE_AFTER's default: 5 days.
      autoDisableAt: new Date(failingSince.getTime() + 5 * DAY).toISOString(),
      warning: null,
    });

    const dayOld = new Date(Date.now() - DAY - 60_000);
    await storeHealth(s.merchantTarget, { failingSince: dayOld });
    const warned = await status(s.merchantKey.key).expect(200);
    expectDocumented(document, 'merchant', '/notification-target', 'get', warned);
    const autoDisableAt = new Date(dayOld.getTime() + 5 * DAY).toISOString();
    expect(warned.body).toMatchObject({ autoDisableAt, enabled: true });
    expect(warned.body.warning).toContain(dayOld.toISOString());
    expect(warned.body.warning).toContain(autoDisableAt);
  });

  it('says why a target is off: switched off by support, or auto-disabled, and names no auto-disable date then', async () => {
    const s = await scene();
    await api.admin('patch', `/merchants/${s.merchantId}/notification-target`).send({ enabled: false }).expect(200);
    expect((await status(s.merchantKey.key).expect(200)).body).toMatchObject({
      enabled: false,
      disabledReason: 'switched-off',
      disabledAt: expect.any(String),
      autoDisableAt: null,
      warning: null,
    });

    await storeHealth(s.programTarget, { failingSince: new Date(Date.now() - 6 * DAY), enabled: false, disabledReason: 'auto-disabled' });
    expect((await status(s.programKey.key).expect(200)).body).toMatchObject({
      enabled: false,
      disabledReason: 'auto-disabled',
      autoDisableAt: null,
      warning: null,
    });
  });

  it("shows the breaker's state as the workers left it in Redis", async () => {
    const s = await scene();
    const redis = createRedisConnection(api.config.redisUrl, { role: 'client' });
    try {
      await pingRedis(redis);
      const gate = createTargetGate(redis, {
        queuePrefix: api.config.queuePrefix,
        settings: { maxInFlight: 1, leaseMs: 60_000, breaker: { failures: 1, ratio: 0, windowMs: 60_000, minRequests: 10, openMs: 30_000, openMaxMs: 60_000 } },
      });
      await gate.admit([{ targetId: s.merchantTarget, jobId: 'j1' }]);
      await gate.release([{ targetId: s.merchantTarget, jobId: 'j1', verdict: 'failure', durationMs: 10 }]);
      await gate.admit([{ targetId: s.merchantTarget, jobId: 'j2' }]);
      const { breaker } = (await status(s.merchantKey.key).expect(200)).body as { breaker: { state: string; openedAt: string; halfOpenAt: string } };
      expect(breaker).toEqual({ state: 'open', openedAt: expect.any(String), halfOpenAt: expect.any(String) });
      expect(Date.parse(breaker.halfOpenAt) - Date.parse(breaker.openedAt)).toBe(30_000);
      // The program's target, whose breaker nothing opened, is not affected.
      expect((await status(s.programKey.key).expect(200)).body.breaker.state).toBe('closed');
    } finally {
      redis.disconnect();
    }
  });

  it('shows no auto-disable date when TARGET_AUTO_DISABLE_AFTER is 0, and the breaker null while Redis cannot be read', async () => {
    const down = createTestApi({ REDIS_URL: `redis://127.0.0.1:${await closedPort()}`, TARGET_AUTO_DISABLE_AFTER: '0' });
    try {
      const s = await scene(down);
      await down.prisma.notificationTarget.update({ where: { id: s.merchantTarget }, data: { failingSince: new Date(Date.now() - 2 * DAY) } });
      const res = await status(s.merchantKey.key, down);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ failingSince: expect.any(String), autoDisableAt: null, warning: null, breaker: null });
    } finally {
      await down.close();
    }
  });

  it("answers 404 to a key whose tenant has no target, never another tenant's target", async () => {
    const bare = await api.createTenant();
    await scene();
    for (const key of [bare.merchantKey.key, bare.programKey.key]) {
      const res = await status(key).expect(404);
      expectDocumented(document, 'merchant', '/notification-target', 'get', res);
      expect(res.body.detail).toMatch(/No notification target is set for this (merchant|program)/);
    }
    // A deleted target is gone for its merchant too.
    const s = await scene();
    await api.admin('delete', `/merchants/${s.merchantId}/notification-target`).expect(204);
    await status(s.merchantKey.key).expect(404);
    expect((await status(s.programKey.key).expect(200)).body.url).toMatch(/^https:\/\/program\.example/);
  });

  it('needs the same key and headers as GET /events: 401 for a revoked key, 400 naming a missing header', async () => {
    const s = await scene();
    const header = await api.merchantGet(s.merchantKey.key, '/notification-target', {}, { Origin: undefined }).expect(400);
    expect(header.body).toMatchObject({ type: '/problems/invalid_header', errors: [{ header: 'Origin' }] });
    await api.admin('delete', `/api-keys/${s.programKey.id}`).expect(200);
    const revoked = await status(s.programKey.key).expect(401);
    expectDocumented(document, 'merchant', '/notification-target', 'get', revoked);
    await status(s.merchantKey.key).expect(200);
  });
});
