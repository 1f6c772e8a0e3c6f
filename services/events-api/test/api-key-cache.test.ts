import { createApiKeyCache } from '../src/auth/api-key-cache';
import { createTestApi, type TestApi } from './support/api';

async function revokeInDatabase(api: TestApi, keyId: string): Promise<void> {
  // As another events-api process (or an operator) would: straight in PostgreSQL.
  await api.prisma.apiKey.update({ where: { id: keyId }, data: { revokedAt: new Date() } });
}

describe('GET /events with the API key cache', () => {
  describe('API_KEY_CACHE_MS=300', () => {
    const api = createTestApi({ API_KEY_CACHE_MS: '300' });
    afterAll(() => api.close());

    it('refuses a key revoked elsewhere once the cache bound has passed', async () => {
      const tenant = await api.createTenant();
      expect((await api.listEvents(tenant.merchantKey.key)).status).toBe(200);
      await revokeInDatabase(api, tenant.merchantKey.id);
      await new Promise((resolve) => setTimeout(resolve, 400));
      const res = await api.listEvents(tenant.merchantKey.key);
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ type: '/problems/unauthorized' });
    });
  });

  describe('API_KEY_CACHE_MS=60000', () => {
    const api = createTestApi({ API_KEY_CACHE_MS: '60000' });
    afterAll(() => api.close());

    it('answers from the cache within the bound, and refuses at once a key this process revokes', async () => {
      const tenant = await api.createTenant();
      expect((await api.listEvents(tenant.programKey.key)).status).toBe(200);
      expect((await api.listEvents(tenant.merchantKey.key)).status).toBe(200);
      // Revoked elsewhere: still known here until the bound (the documented trade-off).
      await revokeInDatabase(api, tenant.programKey.id);
      expect((await api.listEvents(tenant.programKey.key)).status).toBe(200);
      // Revoked through this process: it forgets every cached answer at once.
      expect((await api.admin('delete', `/api-keys/${tenant.merchantKey.id}`)).status).toBe(200);
      expect((await api.listEvents(tenant.merchantKey.key)).status).toBe(401);
      expect((await api.listEvents(tenant.programKey.key)).status).toBe(401);
    });

    it('remembers an unknown key as unknown, and a new key works at once', async () => {
      expect((await api.listEvents('hk_unknown')).status).toBe(401);
      const tenant = await api.createTenant();
      expect((await api.listEvents(tenant.merchantKey.key)).status).toBe(200);
    });
  });

  describe('API_KEY_CACHE_MS=0', () => {
    const api = createTestApi({ API_KEY_CACHE_MS: '0' });
    afterAll(() => api.close());

    it('asks the database on every request', async () => {
      const tenant = await api.createTenant();
      expect((await api.listEvents(tenant.merchantKey.key)).status).toBe(200);
      await revokeInDatabase(api, tenant.merchantKey.id);
      expect((await api.listEvents(tenant.merchantKey.key)).status).toBe(401);
    });
  });
});

describe('createApiKeyCache', () => {
  const answer = { keyId: 'k', scope: { kind: 'program' as const, programId: 'p' } };

  it('asks again after a failed lookup instead of remembering the failure', async () => {
    let calls = 0;
    const cache = createApiKeyCache(
      {
        authenticate: async () => {
          calls += 1;
          if (calls === 1) throw new Error('database down');
          return answer;
        },
      },
      { ttlMs: 60_000 },
    );
    await expect(cache.authenticate('hk_a')).rejects.toThrow('database down');
    await expect(cache.authenticate('hk_a')).resolves.toEqual(answer);
    await expect(cache.authenticate('hk_a')).resolves.toEqual(answer);
    expect(calls).toBe(2);
  });

  it('shares one lookup between overlapping requests, and asks again after the bound', async () => {
    let calls = 0;
    let clock = 0;
    const cache = createApiKeyCache({ authenticate: async () => (calls += 1, answer) }, { ttlMs: 1_000, now: () => clock });
    await Promise.all([cache.authenticate('hk_a'), cache.authenticate('hk_a')]);
    expect(calls).toBe(1);
    clock = 999;
    await cache.authenticate('hk_a');
    expect(calls).toBe(1);
    clock = 1_000;
    await cache.authenticate('hk_a');
    expect(calls).toBe(2);
  });

  it('holds at most maxEntries keys, dropping the oldest', async () => {
    const asked: string[] = [];
    const cache = createApiKeyCache({ authenticate: async (key) => (asked.push(key), answer) }, { ttlMs: 60_000, maxEntries: 2 });
    for (const key of ['hk_a', 'hk_b', 'hk_c', 'hk_c', 'hk_b', 'hk_a']) await cache.authenticate(key);
    expect(asked).toEqual(['hk_a', 'hk_b', 'hk_c', 'hk_a']);
  });
});
