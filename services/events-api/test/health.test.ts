import request from 'supertest';
import { loadApiConfig } from '@herald/config';
import { createLogger } from '@herald/logging';
import { createDeliveryProducer, createRedisConnection, type RedisConnection } from '@herald/queue';
import { closedPort, removeQueueKeys, testDatabaseUrl, uniqueId } from '@herald/testing';
import { PassThrough } from 'node:stream';
import { createApp } from '../src/app';
import { closeApiDatabases, createApiDatabases, type ApiDatabases } from '../src/databases';

// Its own queue prefix: the producer's queue writes its meta key to whichever Redis answers.
const config = loadApiConfig({ NODE_ENV: 'test', READINESS_TIMEOUT_MS: '1500', QUEUE_PREFIX: uniqueId('health') });
const logger = createLogger({ level: 'error', service: 'test', stream: new PassThrough() });

describe('health endpoints', () => {
  const opened: Array<{ close: () => Promise<unknown> }> = [];
  function appWith(databases: ApiDatabases, redis: RedisConnection) {
    const producer = createDeliveryProducer(redis, { prefix: config.queuePrefix, retry: config.retry, timeoutMs: config.enqueueTimeoutMs });
    // As in server.ts: a queue whose Redis does not answer reports it, and is closed after the tests.
    producer.queue.on('error', () => undefined);
    opened.push({ close: () => producer.close() });
    return createApp({ config, logger, databases, redis, producer });
  }
  function databasesAt(url: string): ApiDatabases {
    const databases = createApiDatabases({ ...config, databaseUrl: url }, { connectionTimeoutMs: 1_000 });
    opened.push({ close: () => closeApiDatabases(databases) });
    return databases;
  }
  function redisAt(url: string): RedisConnection {
    const redis = createRedisConnection(url, { role: 'client' });
    redis.on('error', () => undefined);
    opened.push({ close: async () => redis.disconnect() });
    return redis;
  }
  afterAll(async () => {
    await Promise.all(opened.map((o) => o.close()));
    await removeQueueKeys(config.redisUrl, config.queuePrefix);
  });

  it('GET /healthz answers 200 whatever the dependencies do', async () => {
    const port = await closedPort();
    const app = appWith(databasesAt(`postgresql://postgres@127.0.0.1:${port}/x`), redisAt(`redis://127.0.0.1:${port}`));
    const res = await request(app).get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('GET /readyz answers 200 when PostgreSQL and Redis answer', async () => {
    const app = appWith(databasesAt(testDatabaseUrl()), redisAt(config.redisUrl));
    const res = await request(app).get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ready', checks: { postgres: { status: 'up' }, redis: { status: 'up' } } });
  });

  it('GET /readyz answers 503 problem+json naming PostgreSQL when it does not answer', async () => {
    const port = await closedPort();
    const app = appWith(databasesAt(`postgresql://postgres@127.0.0.1:${port}/x`), redisAt(config.redisUrl));
    const res = await request(app).get('/readyz');
    expect(res.status).toBe(503);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 503, down: ['postgres'], checks: { redis: { status: 'up' }, postgres: { status: 'down' } } });
  });

  it('GET /readyz answers 503 problem+json naming Redis when it does not answer', async () => {
    const port = await closedPort();
    const app = appWith(databasesAt(testDatabaseUrl()), redisAt(`redis://127.0.0.1:${port}`));
    const res = await request(app).get('/readyz');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ down: ['redis'], checks: { postgres: { status: 'up' }, redis: { status: 'down' } } });
  });

  it('answers an unknown route with 404 problem+json', async () => {
    const app = appWith(databasesAt(testDatabaseUrl()), redisAt(config.redisUrl));
    const res = await request(app).get('/nope');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ type: '/problems/not_found', title: 'Not Found', status: 404 });
  });
});
