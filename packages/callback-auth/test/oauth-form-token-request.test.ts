import rootPackage from '../../../package.json';
import { TokenRequestError, checkOAuthCredentials, createAuthStrategy, type TargetAuthSettings } from '../src';
import { always } from './support/fake-token-endpoint';
import { credentialForms, errorFrom, expectNoSecrets } from './support/secrets';
import { useTestEnvironment } from './support/test-environment';

// Characters RFC 6749 §2.3.1 form-encodes before Base64: '+' and '%'.
const SECRET = 's3cr+t%zz';

describe('the RFC 6749 form token request', () => {
  const env = useTestEnvironment();
  const settings = (overrides: Partial<TargetAuthSettings> = {}): TargetAuthSettings => ({
    targetId: 'target-1',
    mode: 'oauth',
    authUrl: env.endpoint.url,
    username: 'shop-client',
    password: SECRET,
    tokenRequest: 'form',
    ...overrides,
  });

  it('is POST {authUrl} with a form body and Basic credentials form-encoded before Base64 (§2.3.1, §4.4.2)', async () => {
    const strategy = createAuthStrategy(settings(), env.redis.deps());
    await expect(strategy.headers()).resolves.toEqual({ authorization: 'Bearer token-1' });

    const [request] = env.endpoint.requests;
    expect(request?.method).toBe('POST');
    expect(request?.url).toBe('/oauth/token');
    expect(request?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(request?.headers['user-agent']).toBe(`Herald/${rootPackage.version}`);
    expect(request?.headers['authorization']).toBe(`Basic ${Buffer.from('shop-client:s3cr%2Bt%25zz').toString('base64')}`);
    expect(request?.body).toBe('grant_type=client_credentials');
  });

  it('form-encodes the client id too, a space as "+"', async () => {
    await createAuthStrategy(settings({ username: 'shop client' }), env.redis.deps()).headers();
    const decoded = Buffer.from(env.endpoint.requests[0]!.headers['authorization']!.replace('Basic ', ''), 'base64').toString();
    expect(decoded).toBe('shop+client:s3cr%2Bt%25zz');
  });

  it("asks for the target's scope in the body", async () => {
    await createAuthStrategy(settings({ scope: 'notifications:write events' }), env.redis.deps()).headers();
    expect(new URLSearchParams(env.endpoint.requests[0]!.body)).toEqual(
      new URLSearchParams({ grant_type: 'client_credentials', scope: 'notifications:write events' }),
    );
  });

  it('client_secret_post sends the credentials as client_id and client_secret in the form body, with no Authorization header', async () => {
    const strategy = createAuthStrategy(settings({ tokenRequest: 'client_secret_post', username: 'shop client', scope: 'callbacks' }), env.redis.deps());
    await expect(strategy.headers()).resolves.toEqual({ authorization: 'Bearer token-1' });
    const [request] = env.endpoint.requests;
    expect(request?.url).toBe('/oauth/token');
    expect(request?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(request?.headers['authorization']).toBeUndefined();
    expect(new URLSearchParams(request!.body)).toEqual(
      new URLSearchParams({ grant_type: 'client_credentials', client_id: 'shop client', client_secret: SECRET, scope: 'callbacks' }),
    );
  });

  it("keeps the authUrl's own query, with no grant_type added to it", async () => {
    await createAuthStrategy(settings({ authUrl: `${env.endpoint.url}?tenant=a%20b` }), env.redis.deps()).headers();
    expect(env.endpoint.requests[0]?.url).toBe('/oauth/token?tenant=a%20b');
  });

  it('the spec request adds the scope to its JSON body when the target has one', async () => {
    await createAuthStrategy(settings({ tokenRequest: 'spec', scope: 'callbacks' }), env.redis.deps()).headers();
    const [request] = env.endpoint.requests;
    expect(request?.url).toBe('/oauth/token?grant_type=client_credentials');
    expect(JSON.parse(request!.body)).toEqual({ grant_type: 'client_credentials', username: 'shop-client', password: SECRET, scope: 'callbacks' });
  });

  it.each([
    ['an unknown tokenRequest', { tokenRequest: 'xml' as never }, 'tokenRequest'],
    ['a scope with a double space', { scope: 'a  b' }, 'scope'],
    ['a scope with a quote', { scope: 'a"b' }, 'scope'],
  ])('refuses %s as a configuration error', async (_case, overrides, field) => {
    const error = await errorFrom(() => createAuthStrategy(settings(overrides), env.redis.deps()));
    expect(error).toMatchObject({ name: 'AuthConfigurationError', field });
  });

  it('does not share a cached token between the spec and the form request of the same credentials', async () => {
    await createAuthStrategy(settings({ tokenRequest: 'spec' }), env.redis.deps()).headers();
    await expect(createAuthStrategy(settings(), env.redis.deps()).headers()).resolves.toEqual({ authorization: 'Bearer token-2' });
    await expect(createAuthStrategy(settings({ scope: 'x' }), env.redis.deps()).headers()).resolves.toEqual({ authorization: 'Bearer token-3' });
  });
});

describe("a token endpoint's RFC 6749 error answer", () => {
  const env = useTestEnvironment();
  const strategy = (tokenRequest: 'spec' | 'form') =>
    createAuthStrategy(
      { targetId: 'target-1', mode: 'oauth', authUrl: env.endpoint.url, username: 'client', password: SECRET, tokenRequest },
      env.redis.deps(),
    );

  it.each(['spec', 'form'] as const)('is named in the error of a %s request: status, error and error_description', async (style) => {
    env.endpoint.respondWith(always({ status: 400, body: { error: 'invalid_client', error_description: 'client authentication failed' } }));
    const error = await errorFrom(() => strategy(style).headers());
    expect(error).toBeInstanceOf(TokenRequestError);
    expect(error).toMatchObject({ kind: 'http_status', status: 400, oauthError: { error: 'invalid_client', description: 'client authentication failed' } });
    expect(error.message).toBe(
      'Token request for target "target-1" failed (http_status): the token endpoint answered HTTP 400: invalid_client (client authentication failed)',
    );
  });

  it('is redacted: a secret the endpoint echoes back is masked', async () => {
    env.endpoint.respondWith(always({ status: 401, body: { error: 'invalid_client', error_description: `wrong secret ${SECRET} for client` } }));
    const error = await errorFrom(() => strategy('form').headers());
    expect(error.message).toContain('invalid_client (wrong secret [REDACTED] for client)');
    expectNoSecrets(error, credentialForms('client', SECRET));
  });

  it('is bounded in length', async () => {
    env.endpoint.respondWith(always({ status: 400, body: { error: 'e'.repeat(500), error_description: 'd'.repeat(5000) } }));
    const error = (await errorFrom(() => strategy('form').headers())) as TokenRequestError;
    expect(error.oauthError!.error.length).toBeLessThanOrEqual(64);
    expect(error.oauthError!.description!.length).toBeLessThanOrEqual(300);
    expect(error.message.length).toBeLessThan(500);
  });

  it.each([
    ['a body that is not JSON', 'Bad Request'],
    ['an error that is not a string', { error: 7 }],
    ['an error with a line break', { error: 'invalid_client\r\nx-injected: 1' }],
  ])('is left out when the body is %s: the status alone is named', async (_case, body) => {
    env.endpoint.respondWith(always({ status: 400, body }));
    const error = await errorFrom(() => strategy('form').headers());
    expect(error.message).toBe('Token request for target "target-1" failed (http_status): the token endpoint answered HTTP 400');
  });
});

describe('checkOAuthCredentials', () => {
  const env = useTestEnvironment();
  const settings = (): TargetAuthSettings => ({
    targetId: 'new target',
    mode: 'oauth',
    authUrl: env.endpoint.url,
    username: 'client',
    password: SECRET,
    tokenRequest: 'form',
  });

  it("makes one token request and primes the shared cache, so that the target's first callback reuses the token", async () => {
    const checked = await checkOAuthCredentials(settings(), env.redis.deps());
    expect(env.endpoint.requests).toHaveLength(1);
    await checked.primeCache('target-42');

    const strategy = createAuthStrategy({ ...settings(), targetId: 'target-42' }, env.redis.deps());
    await expect(strategy.headers()).resolves.toEqual({ authorization: 'Bearer token-1' });
    expect(env.endpoint.requests).toHaveLength(1);
  });

  it("throws the endpoint's answer when it issues no token, and caches nothing", async () => {
    env.endpoint.respondWith(always({ status: 401, body: { error: 'invalid_client' } }));
    const error = await errorFrom(() => checkOAuthCredentials(settings(), env.redis.deps()));
    expect(error).toMatchObject({ name: 'TokenRequestError', status: 401, oauthError: { error: 'invalid_client' } });
    await expect(env.redis.keys()).resolves.toEqual([]);
  });
});
