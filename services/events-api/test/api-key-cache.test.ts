import { waitFor } from '@herald/testing';
import { createApiKeyCache } from '../src/auth/api-key-cache';
import { createKnownKeyPrefixes, type KnownKeyPrefixes } from '../src/auth/known-key-prefixes';
import { limitUnknownKeyLookups } from '../src/auth/unknown-key-limit';
import { HttpError } from '../src/http/http-error';
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
      // Refused within the bound (300 ms), give or take a slow request: not after seconds.
      const res = await waitFor(
        () => api.listEvents(tenant.merchantKey.key),
        (answer) => answer.status !== 200,
        2_000,
        'the cached key to be forgotten',
      );
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
      expect((await api.listEvents(`hk_${'u'.repeat(43)}`)).status).toBe(401);
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

/** Whom the requests of the cache's tests come from. */
const SOURCE = '192.0.2.1';

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
    await expect(cache.authenticate('hk_a', SOURCE)).rejects.toThrow('database down');
    await expect(cache.authenticate('hk_a', SOURCE)).resolves.toEqual(answer);
    await expect(cache.authenticate('hk_a', SOURCE)).resolves.toEqual(answer);
    expect(calls).toBe(2);
  });

  it('shares one lookup between overlapping requests, and asks again after the bound', async () => {
    let calls = 0;
    let clock = 0;
    const cache = createApiKeyCache(
      {
        authenticate: async () => {
          calls += 1;
          return null;
        },
      },
      { ttlMs: 1_000, now: () => clock },
    );
    await Promise.all([cache.authenticate('hk_a', SOURCE), cache.authenticate('hk_a', SOURCE)]);
    expect(calls).toBe(1);
    clock = 999;
    await cache.authenticate('hk_a', SOURCE);
    expect(calls).toBe(1);
    clock = 1_000;
    await cache.authenticate('hk_a', SOURCE);
    expect(calls).toBe(2);
  });

  it('looks a known key in use up again in the last fifth of its answer’s life, serving the old answer meanwhile', async () => {
    const answers: Array<typeof answer | null> = [answer, answer, null];
    let calls = 0;
    let clock = 0;
    const cache = createApiKeyCache({ authenticate: async () => answers[calls++] ?? null }, { ttlMs: 1_000, now: () => clock });
    await cache.authenticate('hk_a', SOURCE);
    clock = 799;
    await cache.authenticate('hk_a', SOURCE);
    expect(calls).toBe(1);
    clock = 800;
    await expect(cache.authenticate('hk_a', SOURCE)).resolves.toEqual(answer);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toBe(2);
    // Past the first answer's bound the refreshed one serves: no request waits on a lookup.
    clock = 1_500;
    await expect(cache.authenticate('hk_a', SOURCE)).resolves.toEqual(answer);
    expect(calls).toBe(2);
    // The next refresh finds the key revoked: the cache answers so as soon as it arrives.
    clock = 1_650;
    await cache.authenticate('hk_a', SOURCE);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toBe(3);
    await expect(cache.authenticate('hk_a', SOURCE)).resolves.toBeNull();
    // An unknown or revoked key is not looked up in the background: its answer serves until its bound.
    clock = 2_600;
    await expect(cache.authenticate('hk_a', SOURCE)).resolves.toBeNull();
    expect(calls).toBe(3);
  });

  it('holds at most maxEntries keys, dropping the oldest', async () => {
    const asked: string[] = [];
    const cache = createApiKeyCache(
      {
        authenticate: async (key) => {
          asked.push(key);
          return answer;
        },
      },
      { ttlMs: 60_000, maxEntries: 2 },
    );
    for (const key of ['hk_a', 'hk_b', 'hk_c', 'hk_c', 'hk_b', 'hk_a']) await cache.authenticate(key, SOURCE);
    expect(asked).toEqual(['hk_a', 'hk_b', 'hk_c', 'hk_a']);
  });
});

describe('createApiKeyCache memory', () => {
  const answer = { keyId: 'k', scope: { kind: 'program' as const, programId: 'p' } };
  const keyOf = (i: number) => `hk_${String(i).padStart(43, '0')}`;

  it('drops expired answers as soon as it is used again, so a flood of keys leaves nothing behind', async () => {
    let clock = 0;
    const cache = createApiKeyCache({ authenticate: async () => null }, { ttlMs: 1_000, now: () => clock });
    for (let i = 0; i < 500; i++) await cache.authenticate(keyOf(i), SOURCE);
    expect(cache.usage().entries).toBe(500);
    clock = 1_000;
    await cache.authenticate(keyOf(-1), SOURCE);
    expect(cache.usage().entries).toBe(1);
  });

  it('holds at most maxBytes, counting each key by its length, dropping the oldest', async () => {
    const asked: string[] = [];
    const cache = createApiKeyCache(
      {
        authenticate: async (key) => {
          asked.push(key);
          return answer;
        },
      },
      { ttlMs: 60_000, maxBytes: 4_000 },
    );
    const long = (c: string) => `hk_${c.repeat(1_000)}`;
    for (const key of [long('a'), long('b'), long('c')]) await cache.authenticate(key, SOURCE);
    expect(cache.usage().bytes).toBeLessThanOrEqual(4_000);
    expect(cache.usage().entries).toBe(1);
    await cache.authenticate(long('c'), SOURCE);
    await cache.authenticate(long('a'), SOURCE);
    expect(asked).toEqual([long('a'), long('b'), long('c'), long('a')]);
  });

  it('answers a key too large to hold without keeping it', async () => {
    const cache = createApiKeyCache({ authenticate: async () => answer }, { ttlMs: 60_000, maxBytes: 1_000 });
    await expect(cache.authenticate(`hk_${'x'.repeat(2_000)}`, SOURCE)).resolves.toEqual(answer);
    expect(cache.usage()).toEqual({ entries: 0, bytes: 0 });
  });
});

describe('limitUnknownKeyLookups', () => {
  const known = { keyId: 'k', scope: { kind: 'program' as const, programId: 'p' } };
  /** A key starting with `prefix` (a key's prefix is hk_ and 6 characters) and a distinct tail. */
  const keyWith = (prefix: string, tail: number | string) => `${prefix}${String(tail).padStart(37, '0')}`;
  const inUse = 'hk_inuse_';
  const KEY_IN_USE = keyWith(inUse, 'x');
  /** A repository whose only key is KEY_IN_USE, recording what it was asked. */
  function repository(asked: string[] = []) {
    return {
      asked,
      authenticate: async (key: string) => {
        asked.push(key);
        return key === KEY_IN_USE ? known : null;
      },
    };
  }
  /** Prefixes as loaded: the one key's, plus those added. */
  function prefixesOf(...loaded: string[]): KnownKeyPrefixes & { added: string[] } {
    const added: string[] = [];
    return {
      added,
      has: (prefix) => loaded.includes(prefix) || added.includes(prefix),
      add: (prefix) => {
        added.push(prefix);
      },
    };
  }

  it('looks up made-up keys within perAddress per source and perSecond in all, then refuses them with 429 without asking', async () => {
    let clock = 5_000;
    const repo = repository();
    const limited = limitUnknownKeyLookups(repo, { perSecond: 3, perAddress: 2, perPrefix: 100, prefixes: prefixesOf(inUse), now: () => clock });
    await expect(limited.authenticate(keyWith('hk_made1', 1), 'a')).resolves.toBeNull();
    await expect(limited.authenticate(keyWith('hk_made2', 2), 'a')).resolves.toBeNull();
    const refusal = await limited.authenticate(keyWith('hk_made3', 3), 'a').catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(HttpError);
    expect(refusal).toMatchObject({ status: 429, code: 'too_many_unknown_keys', headers: { 'Retry-After': '1' } });
    await expect(limited.authenticate(keyWith('hk_made4', 4), 'b')).resolves.toBeNull();
    await expect(limited.authenticate(keyWith('hk_made5', 5), 'c')).rejects.toMatchObject({ status: 429 });
    expect(repo.asked).toHaveLength(3);
    clock = 6_000;
    await expect(limited.authenticate(keyWith('hk_made5', 5), 'c')).resolves.toBeNull();
  });

  it('never refuses a key in use, however many made-up keys came first', async () => {
    const repo = repository();
    const limited = limitUnknownKeyLookups(repo, { perSecond: 1, perAddress: 1, perPrefix: 1, prefixes: prefixesOf(inUse), now: () => 0 });
    for (let i = 0; i < 20; i++) await limited.authenticate(keyWith('hk_made0', i), `source-${i}`).catch(() => undefined);
    await expect(limited.authenticate(KEY_IN_USE, 'source-0')).resolves.toEqual(known);
  });

  it('limits lookups that find no key per known prefix, that prefix alone', async () => {
    const repo = repository();
    const limited = limitUnknownKeyLookups(repo, { perSecond: 100, perAddress: 100, perPrefix: 2, prefixes: prefixesOf(inUse, 'hk_other_'), now: () => 0 });
    await limited.authenticate(keyWith(inUse, 1), 'a');
    await limited.authenticate(keyWith(inUse, 2), 'b');
    await expect(limited.authenticate(keyWith(inUse, 3), 'c')).rejects.toMatchObject({ status: 429 });
    await expect(limited.authenticate(keyWith('hk_other_', 1), 'a')).resolves.toBeNull();
  });

  it('learns the prefix of a key found with a prefix it did not know (a key made by another process)', async () => {
    const prefixes = prefixesOf();
    const limited = limitUnknownKeyLookups(repository(), { perSecond: 5, perAddress: 5, perPrefix: 5, prefixes, now: () => 0 });
    await expect(limited.authenticate(KEY_IN_USE, 'a')).resolves.toEqual(known);
    expect(prefixes.added).toEqual([inUse]);
  });

  it('is not remembered by the cache: the key is asked again once the second has passed', async () => {
    let clock = 0;
    const repo = repository();
    const limited = limitUnknownKeyLookups(repo, { perSecond: 1, perAddress: 1, perPrefix: 1, prefixes: prefixesOf(inUse), now: () => clock });
    const cache = createApiKeyCache(limited, { ttlMs: 60_000, now: () => clock });
    await cache.authenticate(keyWith('hk_made1', 1), SOURCE);
    await expect(cache.authenticate(keyWith('hk_made2', 2), SOURCE)).rejects.toMatchObject({ status: 429 });
    clock = 1_000;
    await expect(cache.authenticate(keyWith('hk_made2', 2), SOURCE)).resolves.toBeNull();
    expect(repo.asked).toHaveLength(2);
  });
});

describe('createKnownKeyPrefixes', () => {
  it('counts every prefix as known until the first load, then knows those loaded and added, reloading on use after reloadMs', async () => {
    let clock = 0;
    const stored = ['hk_aaaaaa'];
    let loads = 0;
    let release: () => void = () => undefined;
    const prefixes = createKnownKeyPrefixes(
      {
        knownPrefixes: async () => {
          loads += 1;
          await new Promise<void>((resolve) => (release = resolve));
          return [...stored];
        },
      },
      { reloadMs: 1_000, now: () => clock },
    );
    expect(prefixes.has('hk_zzzzzz')).toBe(true);
    prefixes.add('hk_bbbbbb');
    release();
    await waitFor(
      () => prefixes.has('hk_zzzzzz'),
      (has) => !has,
      1_000,
      'the first load',
    );
    expect([prefixes.has('hk_aaaaaa'), prefixes.has('hk_bbbbbb')]).toEqual([true, true]);
    expect(loads).toBe(1);
    stored.push('hk_cccccc');
    clock = 999;
    expect(prefixes.has('hk_cccccc')).toBe(false);
    expect(loads).toBe(1);
    clock = 1_000;
    prefixes.has('hk_cccccc');
    expect(loads).toBe(2);
    release();
    await waitFor(() => prefixes.has('hk_cccccc'), Boolean, 1_000, 'the reload');
  });
});

describe('GET /events with UNKNOWN_API_KEYS_PER_SECOND=2', () => {
  const api = createTestApi({ UNKNOWN_API_KEYS_PER_SECOND: '2' });
  afterAll(() => api.close());

  it('answers a flood of unknown keys 429 problem+json with Retry-After, while a cached key keeps working', async () => {
    const tenant = await api.createTenant();
    expect((await api.listEvents(tenant.merchantKey.key)).status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await api.listEvents(`hk_${String(i).padStart(43, 'f')}`);
      statuses.push(res.status);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      if (res.status === 429) expect(res.headers['retry-after']).toBe('1');
    }
    expect(new Set(statuses)).toEqual(new Set([401, 429]));
    expect((await api.listEvents(tenant.merchantKey.key)).status).toBe(200);
  });
});
