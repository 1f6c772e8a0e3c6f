import { createConnectGuard, createOutboundClient } from '@herald/outbound';
import { startHttpRecorder } from '@herald/testing';
import rootPackage from '../../../package.json';
import { TokenRequestError, createAuthStrategy, type TokenRequestFailureKind } from '../src';
import { always, issueTokens, refusingUrl, startFakeTokenEndpoint, type Reply } from './support/fake-token-endpoint';
import { credentialForms, errorFrom, expectNoSecrets } from './support/secrets';
import { useTestEnvironment } from './support/test-environment';

const USERNAME = 'Aladdin';
const PASSWORD = 'open sesame';
const ISSUED_TOKEN = 'issued-token-that-must-stay-secret';
const TIMEOUT_MS = 300;

describe('the oauth token request', () => {
  const env = useTestEnvironment();
  // The axios transport loads axios at its first request, inside that request's time limit: on a
  // loaded machine that alone took longer than TIMEOUT_MS. Loaded once here by a request with a
  // generous limit, the limit below measures only the request, as every test means it to.
  beforeAll(async () => {
    const warmUp = await startHttpRecorder();
    try {
      const client = createOutboundClient({ guard: createConnectGuard({ allowPrivate: true, hostAllowlist: [] }), transport: 'axios' });
      await client.send({ url: warmUp.origin, method: 'GET', headers: {}, timeoutMs: 30_000, maxResponseBytes: 16 });
    } finally {
      await warmUp.close();
    }
  });
  const strategyFor = (authUrl: string) =>
    createAuthStrategy(
      { targetId: 'target-1', mode: 'oauth', authUrl, username: USERNAME, password: PASSWORD },
      env.redis.deps({ tokenRequestTimeoutMs: TIMEOUT_MS, maxTokenResponseBytes: 1024 }),
    );

  it('is POST {authUrl}?grant_type=client_credentials with a JSON body and Basic credentials, as the spec gives it', async () => {
    await expect(strategyFor(env.endpoint.url).headers()).resolves.toEqual({ authorization: 'Bearer token-1' });

    expect(env.endpoint.requests).toHaveLength(1);
    const [request] = env.endpoint.requests;
    expect(request?.method).toBe('POST');
    expect(request?.url).toBe('/oauth/token?grant_type=client_credentials');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.headers['authorization']).toBe('Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==');
    expect(request?.headers['user-agent']).toBe(`Herald/${rootPackage.version}`);
    expect(JSON.parse(request?.body ?? '')).toEqual({ grant_type: 'client_credentials', username: USERNAME, password: PASSWORD });
  });

  it('appends grant_type after a query the authUrl already has, keeping its encoding', async () => {
    await strategyFor(`${env.endpoint.url}?tenant=a%20b&region=eu`).headers();
    expect(env.endpoint.requests[0]?.url).toBe('/oauth/token?tenant=a%20b&region=eu&grant_type=client_credentials');
  });

  it('does not repeat grant_type when the authUrl already asks for client_credentials', async () => {
    await strategyFor(`${env.endpoint.url}?grant_type=client_credentials`).headers();
    expect(env.endpoint.requests[0]?.url).toBe('/oauth/token?grant_type=client_credentials');
  });

  it.each([
    ['token_type in lower case', { token_type: 'bearer' }],
    ['token_type in upper case', { token_type: 'BEARER' }],
    ['no token_type at all', { token_type: undefined }],
    ['expires_in as a string of digits', { expires_in: '3600' }],
    ['no expires_in (RFC 6749 only recommends it)', { expires_in: undefined }],
    ['a scope', { scope: 'notifications write' }],
  ])('accepts a token response with %s', async (_case, fields) => {
    env.endpoint.respondWith(issueTokens(fields));
    await expect(strategyFor(env.endpoint.url).headers()).resolves.toEqual({ authorization: 'Bearer token-1' });
  });

  it.each([
    ['starts like the end of the code', 'client-secret-4f9a', 'bad client; got [REDACTED]'],
    // The description is free text: there the word is the secret, and is masked.
    ['is a word of the code', 'client', 'bad [REDACTED]; got [REDACTED]'],
  ])('keeps an RFC 6749 error code whole when the password %s: only secrets are redacted', async (_case, password, description) => {
    env.endpoint.respondWith(always({ status: 401, body: { error: 'invalid_client', error_description: `bad client; got ${password}` } }));
    const strategy = createAuthStrategy(
      { targetId: 'target-1', mode: 'oauth', authUrl: env.endpoint.url, username: USERNAME, password },
      env.redis.deps({ tokenRequestTimeoutMs: TIMEOUT_MS, maxTokenResponseBytes: 1024 }),
    );
    const error = await errorFrom(() => strategy.headers());
    expect(error).toMatchObject({ oauthError: { error: 'invalid_client', description } });
  });

  const tokenResponse = (fields: Record<string, unknown>): Reply => ({
    status: 200,
    body: { access_token: ISSUED_TOKEN, expires_in: 3600, token_type: 'Bearer', ...fields },
  });

  it.each<[string, Reply, TokenRequestFailureKind]>([
    ['HTTP 500', { status: 500, body: { error: 'server_error', echoed: PASSWORD } }, 'http_status'],
    ['HTTP 401', { status: 401, body: { error: 'invalid_client' } }, 'http_status'],
    ['HTTP 201', { status: 201, body: { access_token: ISSUED_TOKEN, expires_in: 3600 } }, 'http_status'],
    ['a body that is not JSON', { status: 200, body: `<html>${PASSWORD}</html>` }, 'invalid_response'],
    ['a JSON array', { status: 200, body: [ISSUED_TOKEN] }, 'invalid_response'],
    ['no access_token', tokenResponse({ access_token: undefined }), 'invalid_response'],
    ['an empty access_token', tokenResponse({ access_token: '' }), 'invalid_response'],
    ['an access_token with a line break', tokenResponse({ access_token: `${ISSUED_TOKEN}\r\nx-injected: 1` }), 'invalid_response'],
    ['expires_in 0', tokenResponse({ expires_in: 0 }), 'invalid_response'],
    ['a negative expires_in', tokenResponse({ expires_in: -60 }), 'invalid_response'],
    ['a fractional expires_in', tokenResponse({ expires_in: 1.5 }), 'invalid_response'],
    ['expires_in in exponent notation', tokenResponse({ expires_in: '1e3' }), 'invalid_response'],
    ['expires_in null', tokenResponse({ expires_in: null }), 'invalid_response'],
    ['token_type mac', tokenResponse({ token_type: 'mac' }), 'invalid_response'],
    ['a numeric scope', tokenResponse({ scope: 7 }), 'invalid_response'],
    ['a body larger than maxTokenResponseBytes', tokenResponse({ padding: 'x'.repeat(2048) }), 'invalid_response'],
  ])('fails with a TokenRequestError when the endpoint answers %s, showing no secret', async (_case, reply, kind) => {
    env.endpoint.respondWith(always(reply));
    const error = await errorFrom(() => strategyFor(env.endpoint.url).headers());

    expect(error).toBeInstanceOf(TokenRequestError);
    expect(error).toMatchObject({ name: 'TokenRequestError', code: 'callback_auth_token_request_failed', kind, targetId: 'target-1' });
    expectNoSecrets(error, [...credentialForms(USERNAME, PASSWORD), ISSUED_TOKEN]);
    // Nothing cached and the fetch lock released: the next attempt starts clean.
    await expect(env.redis.keys()).resolves.toEqual([]);
  });

  it('does not follow a redirect and fails with kind redirect', async () => {
    const elsewhere = await startFakeTokenEndpoint();
    try {
      env.endpoint.respondWith(always({ status: 302, headers: { location: elsewhere.url } }));
      const error = await errorFrom(() => strategyFor(env.endpoint.url).headers());

      expect(error).toMatchObject({ name: 'TokenRequestError', kind: 'redirect', status: 302 });
      expectNoSecrets(error, credentialForms(USERNAME, PASSWORD));
      expect(elsewhere.requests).toHaveLength(0);
    } finally {
      await elsewhere.close();
    }
  });

  it('fails with kind timeout when the endpoint never answers', async () => {
    env.endpoint.respondWith(always(() => undefined));
    const started = Date.now();
    const error = await errorFrom(() => strategyFor(env.endpoint.url).headers());

    expect(error).toMatchObject({ name: 'TokenRequestError', kind: 'timeout' });
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 1000);
    expectNoSecrets(error, credentialForms(USERNAME, PASSWORD));
  });

  it('fails with kind timeout when the endpoint drips its body past the timeout', async () => {
    env.endpoint.respondWith(
      always((res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"access_token":"');
        const drip = setInterval(() => res.write('x'), TIMEOUT_MS / 5);
        res.on('close', () => clearInterval(drip));
      }),
    );
    const started = Date.now();
    const error = await errorFrom(() => strategyFor(env.endpoint.url).headers());

    expect(error).toMatchObject({ name: 'TokenRequestError', kind: 'timeout' });
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 1000);
  });

  it('fails with kind connection when nothing listens at the authUrl', async () => {
    const error = await errorFrom(async () => strategyFor(await refusingUrl()).headers());
    expect(error).toMatchObject({ name: 'TokenRequestError', kind: 'connection', causeCode: 'ECONNREFUSED' });
    expectNoSecrets(error, credentialForms(USERNAME, PASSWORD));
  });
});
