import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '@herald/testing';
import { TokenWaitTimeoutError, createAuthStrategy, type AuthDependencies, type TargetAuthSettings } from '../src';
import { TokenCache } from '../src/oauth/token-cache';
import { tokenRequestUrl } from '../src/oauth/token-endpoint';
import { always, issueTokens, type Responder } from './support/fake-token-endpoint';
import { errorFrom } from './support/secrets';
import { useTestEnvironment } from './support/test-environment';

/** Answers like `responder`, but only after `ms`, so that concurrent callers overlap the fetch. */
const slowly =
  (ms: number, responder: Responder = issueTokens()): Responder =>
  async (request, index) => {
    await sleep(ms);
    return responder(request, index);
  };

describe('the oauth token cache', () => {
  const env = useTestEnvironment();
  const settings = (): TargetAuthSettings => ({
    targetId: 'target-1',
    mode: 'oauth',
    authUrl: env.endpoint.url,
    username: 'merchant',
    password: 'secret-1',
  });

  /** A strategy on its own Redis connection: what another worker process would build. */
  const inNewProcess = (options: Partial<AuthDependencies> = {}, overrides: Partial<TargetAuthSettings> = {}) =>
    createAuthStrategy({ ...settings(), ...overrides }, env.redis.deps(options));

  /** The Redis keys of the current settings, computed as the module does. */
  const cacheOf = (deps: AuthDependencies) => {
    const { targetId, authUrl, username, password } = settings();
    return new TokenCache(deps, {
      targetId,
      style: 'spec',
      url: tokenRequestUrl(targetId, authUrl),
      credentials: { username: username!, password: password! },
      scope: undefined,
    });
  };

  it('reuses one token for all following callbacks to the target', async () => {
    const strategy = inNewProcess();
    await strategy.headers();
    await strategy.headers();
    await expect(inNewProcess().headers()).resolves.toEqual({ authorization: 'Bearer token-1' });
    expect(env.endpoint.requests).toHaveLength(1);
  });

  it('calls onTokenRequest once for one token request, and not for the cached token', async () => {
    const onTokenRequest = jest.fn();
    await inNewProcess({ onTokenRequest }).headers();
    await inNewProcess({ onTokenRequest }).headers();
    expect(env.endpoint.requests).toHaveLength(1);
    expect(onTokenRequest).toHaveBeenCalledTimes(1);
    expect(onTokenRequest).toHaveBeenCalledWith('issued');
  });

  it('tells onTokenRequest how a failed token request ended', async () => {
    const onTokenRequest = jest.fn();
    env.endpoint.respondWith(() => ({ status: 401, body: { error: 'invalid_client' } }));
    await expect(inNewProcess({ onTokenRequest }).headers()).rejects.toThrow(/HTTP 401/);
    expect(onTokenRequest.mock.calls).toEqual([['http_status']]);
  });

  it('makes exactly one token request for 50 concurrent headers() calls', async () => {
    env.endpoint.respondWith(slowly(100));
    const strategy = inNewProcess();
    const results = await Promise.all(Array.from({ length: 50 }, () => strategy.headers()));
    expect(new Set(results.map((headers) => headers.authorization))).toEqual(new Set(['Bearer token-1']));
    expect(env.endpoint.requests).toHaveLength(1);
  });

  it('makes exactly one token request when two processes ask at the same time', async () => {
    env.endpoint.respondWith(slowly(200));
    const first = inNewProcess();
    const second = inNewProcess();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? first : second).headers()));
    expect(new Set(results.map((headers) => headers.authorization))).toEqual(new Set(['Bearer token-1']));
    expect(env.endpoint.requests).toHaveLength(1);
  });

  it.each([
    ['with a token, a waiting call uses it and requests none', 'token-from-elsewhere', 0],
    ['without a token, a waiting call fetches one itself', 'token-1', 1],
  ])('when another process holding the lock finishes %s', async (_case, expectedToken, requests) => {
    const deps = env.redis.deps();
    const cache = cacheOf(deps);
    const holder = await cache.tryLock(5_000);
    const waiting = createAuthStrategy(settings(), deps).headers();
    // Time for the waiting call to find the lock held and start polling: nothing to observe from
    // outside (it only reads the cache and tries the lock), and the test passes without it too,
    // testing less.
    await sleep(150);
    if (requests === 0) await cache.store(expectedToken, 60_000);
    await cache.unlock(holder!);

    await expect(waiting).resolves.toEqual({ authorization: `Bearer ${expectedToken}` });
    expect(env.endpoint.requests).toHaveLength(requests);
  });

  it('fails with TokenWaitTimeoutError when another process holds the lock past tokenWaitMs', async () => {
    const deps = env.redis.deps({ tokenWaitMs: 200 });
    await cacheOf(deps).tryLock(5_000);
    const started = Date.now();

    const error = await errorFrom(() => createAuthStrategy(settings(), deps).headers());
    expect(error).toBeInstanceOf(TokenWaitTimeoutError);
    expect(error).toMatchObject({ name: 'TokenWaitTimeoutError', code: 'callback_auth_token_wait_timeout', targetId: 'target-1' });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(env.endpoint.requests).toHaveLength(0);
  });

  it('requests a new token once the cached one has expired', async () => {
    env.endpoint.respondWith(issueTokens({ expires_in: 2 }));
    const strategy = inNewProcess({ expiryMarginMs: 500 });
    await expect(strategy.headers()).resolves.toEqual({ authorization: 'Bearer token-1' });
    await expect(strategy.headers()).resolves.toEqual({ authorization: 'Bearer token-1' });

    const cache = cacheOf(env.redis.deps({ expiryMarginMs: 500 }));
    await waitFor(
      () => cache.read(),
      (token) => token === undefined,
      5_000,
      'the cached token to expire',
    );
    await expect(strategy.headers()).resolves.toEqual({ authorization: 'Bearer token-2' });
    expect(env.endpoint.requests).toHaveLength(2);
  });

  it.each([
    [3600, 3_570_000],
    [100, 90_000],
    [10_000_000, 86_400_000],
  ])('caches a token with expires_in %p for %p ms: the smaller margin of 30 s and a tenth, at most a day', async (expiresIn, ttlMs) => {
    env.endpoint.respondWith(issueTokens({ expires_in: expiresIn }));
    const deps = env.redis.deps();
    await createAuthStrategy(settings(), deps).headers();
    const pttl = await deps.redis.pttl(cacheOf(deps).tokenKey);
    expect(pttl).toBeLessThanOrEqual(ttlMs);
    expect(pttl).toBeGreaterThan(ttlMs - 1_000);
  });

  it.each([
    [undefined, 3_570_000],
    [600, 570_000],
  ])('caches a token given without expires_in for defaultTokenLifetimeSeconds %p (default 3600) less the margin', async (lifetime, ttlMs) => {
    env.endpoint.respondWith(issueTokens({ expires_in: undefined }));
    const deps = env.redis.deps(lifetime === undefined ? {} : { defaultTokenLifetimeSeconds: lifetime });
    await createAuthStrategy(settings(), deps).headers();
    const pttl = await deps.redis.pttl(cacheOf(deps).tokenKey);
    expect(pttl).toBeLessThanOrEqual(ttlMs);
    expect(pttl).toBeGreaterThan(ttlMs - 1_000);
  });

  it('uses a token that lives no longer than the margin for its callback without caching it', async () => {
    env.endpoint.respondWith(issueTokens({ expires_in: 1 }));
    const strategy = inNewProcess({ expiryMarginMs: 1_000 });
    await expect(strategy.headers()).resolves.toEqual({ authorization: 'Bearer token-1' });
    await expect(strategy.headers()).resolves.toEqual({ authorization: 'Bearer token-2' });
    await expect(env.redis.keys()).resolves.toEqual([]);
  });

  it('keeps the token in Redis encrypted, readable by another process with the same credentials', async () => {
    const deps = env.redis.deps();
    await createAuthStrategy(settings(), deps).headers();
    const stored = await deps.redis.get(cacheOf(deps).tokenKey);
    expect(stored).toEqual(expect.any(String));
    expect(stored).not.toContain('token-1');
    expect(Buffer.from(stored!, 'base64url').toString('latin1')).not.toContain('token-1');
    await expect(inNewProcess().headers()).resolves.toEqual({ authorization: 'Bearer token-1' });
    expect(env.endpoint.requests).toHaveLength(1);
  });

  it('treats a cached value it cannot decrypt as no token, and fetches a new one', async () => {
    const deps = env.redis.deps();
    await createAuthStrategy(settings(), deps).headers();
    const key = cacheOf(deps).tokenKey;
    const stored = Buffer.from((await deps.redis.get(key))!, 'base64url');
    stored[stored.length - 1]! ^= 1;
    await deps.redis.set(key, stored.toString('base64url'), 'PX', 60_000);
    await expect(inNewProcess().headers()).resolves.toEqual({ authorization: 'Bearer token-2' });
    expect(env.endpoint.requests).toHaveLength(2);
  });

  it('requests a new token when the password changes, under another cache key', async () => {
    await inNewProcess().headers();
    await expect(inNewProcess({}, { password: 'secret-2' }).headers()).resolves.toEqual({ authorization: 'Bearer token-2' });

    expect(env.endpoint.requests).toHaveLength(2);
    const keys = await env.redis.keys();
    expect(keys.filter((key) => key.includes(':token:'))).toHaveLength(2);
    for (const key of keys) expect(key).not.toMatch(/secret-[12]/);
  });

  it('requests a new token after invalidate()', async () => {
    const strategy = inNewProcess();
    await expect(strategy.headers()).resolves.toEqual({ authorization: 'Bearer token-1' });
    await strategy.invalidate();
    await expect(strategy.headers()).resolves.toEqual({ authorization: 'Bearer token-2' });
    expect(env.endpoint.requests).toHaveLength(2);
  });

  it('keeps a fresher token that another process fetched when a stale one is invalidated', async () => {
    const first = inNewProcess();
    const second = inNewProcess();
    await first.headers();
    await second.headers();
    await first.invalidate();
    await expect(first.headers()).resolves.toEqual({ authorization: 'Bearer token-2' });

    await second.invalidate();
    await expect(inNewProcess().headers()).resolves.toEqual({ authorization: 'Bearer token-2' });
    expect(env.endpoint.requests).toHaveLength(2);
  });

  it('fetches again on the next call after a failed token request, without retrying by itself', async () => {
    env.endpoint.respondWith(always({ status: 503 }));
    const strategy = inNewProcess();
    await expect(strategy.headers()).rejects.toMatchObject({ kind: 'http_status', status: 503 });
    expect(env.endpoint.requests).toHaveLength(1);

    env.endpoint.respondWith(issueTokens());
    await expect(strategy.headers()).resolves.toEqual({ authorization: 'Bearer token-2' });
    expect(env.endpoint.requests).toHaveLength(2);
  });
});
