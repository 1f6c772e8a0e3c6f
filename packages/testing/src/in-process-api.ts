import { PassThrough } from 'node:stream';
import request from 'supertest';
import type { RequestListener } from 'node:http';
import { loadApiConfig, testDatabaseUrl, type ApiConfig } from '@herald/config';
import { createLogger, type Logger } from '@herald/logging';
import { createDeliveryProducer, createRedisConnection, fairShareKey, type DeliveryProducer, type RedisConnection } from '@herald/queue';
import { createPrismaClient } from '@herald/db/prisma';
import { removeQueueKeys } from './queue-keys';
import { uniqueId } from './unique-id';

/**
 * What an in-process events-api is made of: the events-api's createApp, createApiDatabases and
 * closeApiDatabases, given by the caller from the service's entry point (packages never import
 * services).
 */
export interface EventsApiParts<Databases, App extends RequestListener> {
  createApiDatabases(config: ApiConfig): Databases;
  closeApiDatabases(databases: Databases): Promise<void>;
  createApp(deps: { config: ApiConfig; logger: Logger; databases: Databases; redis: RedisConnection; producer: DeliveryProducer }): App;
}

/** An events-api in this process on the test database and the real Redis, with its own queue prefix, driven with supertest. */
export function createInProcessApi<Databases, App extends RequestListener>(parts: EventsApiParts<Databases, App>, env: Record<string, string> = {}) {
  const { createApiDatabases, closeApiDatabases, createApp } = parts;
  const config: ApiConfig = loadApiConfig({
    NODE_ENV: 'test',
    DATABASE_URL: testDatabaseUrl(),
    QUEUE_PREFIX: uniqueId('test'),
    RATE_LIMIT_REQUESTS: '10000',
    // Tests send wrong credentials on purpose, all from 127.0.0.1; the throttle's own tests lower these.
    AUTH_FAILURES_PER_ADDRESS: '1000000',
    UNKNOWN_API_KEYS_PER_SECOND: '100000',
    ...env,
  });
  const databases = createApiDatabases(config);
  // Tests seed and inspect through Prisma's model API, on a small pool of their own: the API never loads Prisma.
  const prisma = createPrismaClient(config.databaseUrl, { maxConnections: 2 });
  const redis = createRedisConnection(config.redisUrl, { role: 'client' });
  // Everything down to debug is captured, so tests can search the logs for secrets.
  const logOutput = new PassThrough();
  let logs = '';
  logOutput.on('data', (chunk: Buffer) => (logs += chunk.toString('utf8')));
  const logger = createLogger({ level: 'debug', service: 'test', stream: logOutput });
  const producer = createDeliveryProducer(redis, { prefix: config.queuePrefix, retry: config.retry, timeoutMs: config.enqueueTimeoutMs });
  const deliveryQueue = producer.queue;
  // Tests of an unreachable Redis check the answers; the connection's retries need no printing.
  redis.on('error', () => undefined);
  deliveryQueue.on('error', () => undefined);
  const app = createApp({ config, logger, databases, redis, producer });

  const admin = (method: 'post' | 'put' | 'patch' | 'delete' | 'get', path: string) =>
    request(app)[method](`/admin${path}`).set('Authorization', `Bearer ${config.adminToken}`);
  const ingest = (body: unknown) =>
    request(app)
      .post('/internal/events')
      .set('Authorization', `Bearer ${config.ingestToken}`)
      .send(body as object);

  const merchantGet = (
    apiKey: string | undefined,
    path: string,
    query: Record<string, string | number> = {},
    headers: Record<string, string | undefined> = {},
  ) => {
    const all: Record<string, string | undefined> = {
      'x-api-key': apiKey,
      'Content-Type': 'application/json',
      'Accept-Language': 'en-US',
      Origin: 'https://shop.example',
      'User-Agent': 'herald-tests/1.0',
      ...headers,
    };
    let req = request(app).get(path).query(query);
    for (const [name, value] of Object.entries(all)) if (value !== undefined) req = req.set(name, value);
    return req;
  };

  return {
    app,
    config,
    prisma,
    databases,
    deliveryQueue,
    /** The log lines written so far. */
    logs: () => logs,
    admin,
    ingest,
    /** GET /events with every header the spec requires, overridable per call. */
    listEvents(apiKey: string | undefined, query: Record<string, string | number> = {}, headers: Record<string, string | undefined> = {}) {
      return merchantGet(apiKey, '/events', query, headers);
    },
    /** A GET of the merchant API (/events, /deliveries, /notification-target…) with every header the spec requires, overridable per call. */
    merchantGet,
    /** A fresh program with one merchant, a merchant key and a program key. */
    async createTenant() {
      const program = (await admin('post', '/programs').send({ name: 'Program' }).expect(201)).body as { id: string };
      const merchant = (await admin('post', '/merchants').send({ programId: program.id, name: 'Merchant' }).expect(201)).body as { id: string };
      const merchantKey = (await admin('post', '/api-keys').send({ merchantId: merchant.id }).expect(201)).body as { id: string; key: string };
      const programKey = (await admin('post', '/api-keys').send({ programId: program.id }).expect(201)).body as { id: string; key: string };
      return { programId: program.id, merchantId: merchant.id, merchantKey, programKey };
    },
    async close() {
      // With Redis unreachable, obliterate would wait for a connection forever.
      if (redis.status === 'ready') {
        await deliveryQueue.obliterate({ force: true }).catch(() => undefined);
        await redis.del(fairShareKey(deliveryQueue)).catch(() => undefined);
      }
      await deliveryQueue.close().catch(() => undefined);
      // The target gate's keys (health tests write them) live beside the queue's.
      await removeQueueKeys(config.redisUrl, config.queuePrefix);
      await Promise.all([closeApiDatabases(databases), prisma.$disconnect()]);
      redis.disconnect();
    },
  };
}
