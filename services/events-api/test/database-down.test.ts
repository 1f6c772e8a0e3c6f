import { PassThrough } from 'node:stream';
import request from 'supertest';
import { loadApiConfig } from '@herald/config';
import { createLogger } from '@herald/logging';
import { createDeliveryProducer, createRedisConnection } from '@herald/queue';
import { closedPort, removeQueueKeys, uniqueId } from '@herald/testing';
import { createApp } from '../src/app';
import { expectDocumented } from './support/openapi';
import { closeApiDatabases, createApiDatabases } from '../src/databases';

describe('while PostgreSQL is unreachable', () => {
  let app: ReturnType<typeof createApp>;
  let close: () => Promise<void>;
  const config = loadApiConfig({ NODE_ENV: 'test' });

  beforeAll(async () => {
    const port = await closedPort();
    const databases = createApiDatabases({ ...config, databaseUrl: `postgresql://postgres@127.0.0.1:${port}/herald` }, { connectionTimeoutMs: 500 });
    const redis = createRedisConnection(config.redisUrl, { role: 'client' });
    const prefix = uniqueId('unused');
    const producer = createDeliveryProducer(redis, { prefix, retry: config.retry, timeoutMs: 500 });
    app = createApp({ config, databases, redis, producer, logger: createLogger({ level: 'error', service: 'test', stream: new PassThrough() }) });
    close = async () => {
      await closeApiDatabases(databases);
      redis.disconnect();
      await removeQueueKeys(config.redisUrl, prefix);
    };
  });
  afterAll(() => close());

  const listEvents = (key: string) =>
    request(app)
      .get('/events')
      .set({ 'x-api-key': key, 'Content-Type': 'application/json', 'Accept-Language': 'en-US', Origin: 'https://a.example', 'User-Agent': 't' });

  it('GET /events answers 503 problem+json with Retry-After', async () => {
    const res = await listEvents(`hk_${'A'.repeat(43)}`);
    expect(res.status).toBe(503);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.body).toMatchObject({ type: '/problems/database_unavailable', status: 503 });
    expectDocumented((await request(app).get('/openapi.json').expect(200)).body, 'merchant', '/events', 'get', res);
  });

  // Were any of these looked up, the unreachable database would make it a 503.
  it.each([
    ['no hk_ prefix', 'A'.repeat(46)],
    ['too short', `hk_${'A'.repeat(42)}`],
    ['too long (15.5 KB)', `hk_${'A'.repeat(15_500)}`],
    ['outside base64url', `hk_${'A'.repeat(42)}+`],
  ])('GET /events refuses a key %s with 401 without asking the database', async (_case, key) => {
    const res = await listEvents(key);
    expect(res.status).toBe(401);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 401, header: 'x-api-key', detail: expect.stringMatching(/not a Herald API key/) });
    expect(res.text).not.toContain(key);
  });

  it('ingest answers 503 problem+json, so the producer retries later', async () => {
    const res = await request(app)
      .post('/internal/events')
      .set('Authorization', `Bearer ${config.ingestToken}`)
      .send({ programId: 'p', origin: 'api', eventType: 'created', objectId: 'o', objectType: 'payment' });
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ type: '/problems/database_unavailable' });
    expectDocumented((await request(app).get('/openapi/internal.json').expect(200)).body, 'internal', '/internal/events', 'post', res);
  });
});
