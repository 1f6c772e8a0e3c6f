import { randomUUID } from 'node:crypto';
import { createAuthStrategy } from '@herald/callback-auth';
import { TEST_CALLBACK_HEADER } from '@herald/callbacks';
import { createRedisConnection } from '@herald/queue';
import { always, closedPort, startHttpRecorder, type HttpRecorder, type Responder } from '@herald/testing';
import request from 'supertest';
import rootPackage from '../../../package.json';
import { createTestApi } from './support/api';
import { expectDocumented, type OpenApiDocument } from './support/openapi';

/** The ingest and admin OpenAPI document, as the API serves it. */
const internalDocument = async (): Promise<OpenApiDocument> => (await request(api.app).get('/openapi/internal.json').expect(200)).body as OpenApiDocument;

const api = createTestApi({ CALLBACK_TIMEOUT_MS: '3000', OAUTH_TOKEN_TIMEOUT_MS: '3000' });
const redis = createRedisConnection(api.config.redisUrl, { role: 'client' });
afterAll(async () => {
  const keys = await redis.keys(`${api.config.queuePrefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
  await api.close();
});

const servers: HttpRecorder[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
async function server(responder?: Responder): Promise<HttpRecorder> {
  const started = await startHttpRecorder(responder);
  servers.push(started);
  return started;
}

const SECRET = `s3cr+t%zz-${randomUUID()}`;
const issueToken = (accessToken = 'checked-token'): Responder =>
  always({ status: 200, body: { access_token: accessToken, expires_in: 3600, token_type: 'Bearer' } });
const oauthAuth = (authUrl: string, fields: Record<string, unknown> = {}) => ({ mode: 'oauth', authUrl, username: 'shop-client', password: SECRET, ...fields });

describe('PUT …/notification-target of an OAuth target: the credential check', () => {
  it('makes one token request with the new settings, stores the target and shows tokenRequest and scope', async () => {
    const { merchantId } = await api.createTenant();
    const tokens = await server(issueToken());
    const auth = oauthAuth(`${tokens.origin}/token`, { tokenRequest: 'form', scope: 'callbacks events:read' });
    const put = await api.admin('put', `/merchants/${merchantId}/notification-target`).send({ url: 'https://shop.example/hook', auth });

    expect(put.status).toBe(200);
    expect(put.body.auth).toEqual({ ...auth, password: '********' });
    expect((await api.admin('get', `/merchants/${merchantId}/notification-target`)).body.auth).toEqual(put.body.auth);
    expect(tokens.requests).toHaveLength(1);
    const [request] = tokens.requests;
    expect(request!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(request!.headers['user-agent']).toBe(`Herald/${rootPackage.version}`);
    expect(request!.body).toBe('grant_type=client_credentials&scope=callbacks+events%3Aread');
    expect(put.text).not.toContain(SECRET);
  });

  it("primes the worker's token cache: the first callback's token needs no request of its own", async () => {
    const { programId } = await api.createTenant();
    const tokens = await server(issueToken('token-from-the-check'));
    const auth = oauthAuth(`${tokens.origin}/token`);
    const put = await api.admin('put', `/programs/${programId}/notification-target`).send({ url: 'https://shop.example/hook', auth });
    expect(put.status).toBe(200);

    // Built as the delivery worker builds it: same Redis, key prefix and SECRETS_KEY.
    const strategy = createAuthStrategy(
      { targetId: put.body.id, mode: 'oauth', authUrl: auth.authUrl, username: auth.username, password: SECRET, tokenRequest: 'spec' },
      { redis, keyPrefix: `${api.config.queuePrefix}:`, tokenCacheSecret: api.config.secretsKey },
    );
    await expect(strategy.headers()).resolves.toEqual({ authorization: 'Bearer token-from-the-check' });
    expect(tokens.requests).toHaveLength(1);
  });

  it("refuses wrong credentials with 422 problem+json naming /auth and the token endpoint's answer, and stores nothing", async () => {
    const { programId } = await api.createTenant();
    const tokens = await server(always({ status: 401, body: { error: 'invalid_client', error_description: `Client authentication failed for ${SECRET}` } }));
    const put = await api
      .admin('put', `/programs/${programId}/notification-target`)
      .send({ url: 'https://shop.example/hook', auth: oauthAuth(`${tokens.origin}/token`) });

    expect(put.status).toBe(422);
    expect(put.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(put.body).toMatchObject({
      type: '/problems/credentials_rejected',
      status: 422,
      errors: [
        {
          pointer: '/auth',
          message: 'the token endpoint issued no token: the token endpoint answered HTTP 401: invalid_client (Client authentication failed for [REDACTED])',
        },
      ],
      tokenEndpoint: { failure: 'http_status', status: 401, error: 'invalid_client', errorDescription: 'Client authentication failed for [REDACTED]' },
    });
    expect(put.body.detail).toContain('?verify=false');
    expectDocumented(await internalDocument(), 'internal', '/admin/programs/{programId}/notification-target', 'put', put);
    expect(put.text).not.toContain(SECRET);
    expect(api.logs()).not.toContain(SECRET);
    expect((await api.admin('get', `/programs/${programId}/notification-target`)).status).toBe(404);
  });

  it('refuses a token endpoint nobody answers at with 422 naming the failure', async () => {
    const { programId } = await api.createTenant();
    const put = await api.admin('put', `/programs/${programId}/notification-target`).send({
      url: 'https://shop.example/hook',
      auth: oauthAuth(`http://127.0.0.1:${await closedPort()}/token`),
    });
    expect(put.status).toBe(422);
    expect(put.body.tokenEndpoint).toEqual({ failure: 'connection' });
    expect(put.body.errors[0].message).toContain('ECONNREFUSED');
  });

  it('skips the check with ?verify=false: 200 and no token request', async () => {
    const { programId } = await api.createTenant();
    const tokens = await server(always({ status: 401, body: { error: 'invalid_client' } }));
    const put = await api
      .admin('put', `/programs/${programId}/notification-target?verify=false`)
      .send({ url: 'https://shop.example/hook', auth: oauthAuth(`${tokens.origin}/token`) });
    expect(put.status).toBe(200);
    expect(tokens.requests).toHaveLength(0);
  });

  it('refuses a verify value other than true or false with 400 naming the parameter', async () => {
    const { programId } = await api.createTenant();
    const put = await api
      .admin('put', `/programs/${programId}/notification-target?verify=no`)
      .send({ url: 'https://shop.example/hook', auth: { mode: 'none' } });
    expect(put.status).toBe(400);
    expect(put.body.errors).toEqual([{ parameter: 'verify', message: expect.stringContaining('true, false') }]);
  });
});

describe('POST …/notification-target/test', () => {
  it.each([
    ['a 200', always({ status: 200, body: 'thanks' }), { delivered: true, statusCode: 200, responseBody: 'thanks' }],
    [
      'a 500',
      always({ status: 500, body: { error: 'database down' } }),
      {
        delivered: false,
        statusCode: 500,
        errorKind: 'http_status',
        errorMessage: 'the target answered HTTP 500; only 200 counts as delivered',
        responseBody: '{"error":"database down"}',
      },
    ],
  ])('reports %s from the target as it happened', async (_case, responder, expected) => {
    const { programId } = await api.createTenant();
    const receiver = await server(responder);
    await api
      .admin('put', `/programs/${programId}/notification-target`)
      .send({ url: `${receiver.origin}/hook?shop=1`, auth: { mode: 'basic', username: 'shop', password: SECRET } })
      .expect(200);

    const res = await api.admin('post', `/programs/${programId}/notification-target/test`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ webhookId: expect.stringMatching(/^Test-[0-9a-f-]{36}$/), durationMs: expect.any(Number), ...expected });
    expectDocumented(await internalDocument(), 'internal', '/admin/programs/{programId}/notification-target/test', 'post', res);

    expect(receiver.requests).toHaveLength(1);
    const [request] = receiver.requests;
    expect(request!.url).toBe('/hook?shop=1');
    expect(request!.headers[TEST_CALLBACK_HEADER]).toBe('true');
    expect(request!.headers['webhook-id']).toBe(res.body.webhookId);
    expect(request!.headers.authorization).toBe(`Basic ${Buffer.from(`shop:${SECRET}`).toString('base64')}`);
    expect(JSON.parse(request!.body)).toEqual({
      type: 'herald.test',
      test: true,
      id: res.body.webhookId,
      createdAt: expect.any(String),
      description: expect.stringContaining('not an event'),
    });
  });

  it('reports a refused connection', async () => {
    const { merchantId } = await api.createTenant();
    await api
      .admin('put', `/merchants/${merchantId}/notification-target`)
      .send({ url: `http://127.0.0.1:${await closedPort()}/hook`, auth: { mode: 'none' } })
      .expect(200);
    const res = await api.admin('post', `/merchants/${merchantId}/notification-target/test`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      webhookId: expect.any(String),
      delivered: false,
      durationMs: expect.any(Number),
      errorKind: 'connection',
      errorMessage: 'the connection failed (ECONNREFUSED)',
    });
  });

  it("sends with the target's OAuth token, and redacts a secret the merchant echoes", async () => {
    const { programId } = await api.createTenant();
    const tokens = await server(issueToken('bearer-for-the-test'));
    const receiver = await server((request) => ({ status: 200, body: `you sent ${request.headers.authorization} with ${SECRET}` }));
    await api
      .admin('put', `/programs/${programId}/notification-target`)
      .send({ url: `${receiver.origin}/hook`, auth: oauthAuth(`${tokens.origin}/token`, { tokenRequest: 'form' }) })
      .expect(200);

    const res = await api.admin('post', `/programs/${programId}/notification-target/test`);
    expect(res.body).toMatchObject({ delivered: true, statusCode: 200 });
    expect(receiver.requests[0]!.headers.authorization).toBe('Bearer bearer-for-the-test');
    // The token from the PUT's check, reused from the shared cache.
    expect(tokens.requests).toHaveLength(1);
    expect(res.text).not.toContain(SECRET);
    expect(res.text).not.toContain('bearer-for-the-test');
  });

  it('stores nothing: no event, no delivery', async () => {
    const { programId } = await api.createTenant();
    const receiver = await server();
    const put = await api
      .admin('put', `/programs/${programId}/notification-target`)
      .send({ url: `${receiver.origin}/hook`, auth: { mode: 'none' } })
      .expect(200);
    await api.admin('post', `/programs/${programId}/notification-target/test`).expect(200);
    expect(receiver.requests).toHaveLength(1);
    expect(await api.prisma.event.count({ where: { programId } })).toBe(0);
    expect(await api.prisma.delivery.count({ where: { targetId: put.body.id } })).toBe(0);
    expect(await api.deliveryQueue.getJobCounts()).toEqual(expect.objectContaining({ waiting: 0, delayed: 0, active: 0 }));
  });

  it('answers 404 problem+json when the owner has no target', async () => {
    const { programId } = await api.createTenant();
    const res = await api.admin('post', `/programs/${programId}/notification-target/test`);
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  });
});
