import express, { type Express } from 'express';
import type { ApiConfig } from '@herald/config';
import {
  apiKeyRepository,
  credentialsCipherFromConfig,
  deliveryHistoryRepository,
  deliveryRepository,
  eventRepository,
  ingestStore,
  pingDatabase,
  targetRepository,
  tenantRepository,
  type PrismaClient,
} from '@herald/db';
import { opsEndpoints } from '@herald/lifecycle';
import type { Logger } from '@herald/logging';
import { createMetrics, type HeraldMetrics } from '@herald/metrics';
import { createOutboxPublisher } from '@herald/outbox';
import { pingRedis, type DeliveryProducer } from '@herald/queue';
import type { Redis } from 'ioredis';
import { adminRouter } from './admin/router';
import { createApiKeyCache } from './auth/api-key-cache';
import { requireBearerToken } from './auth/bearer-token';
import { DASHBOARD_PATH, dashboardRouter } from './dashboard/router';
import { createReplay } from './deliveries/replay';
import { deliveriesRouter } from './deliveries/router';
import { eventsRouter } from './events/router';
import { errorHandler, notFound } from './http/error-handler';
import { pathGuard } from './http/path-guard';
import { plainRouter } from './http/plain-adapter';
import { createRateLimit } from './http/rate-limit';
import { requestLog } from './http/request-log';
import { createIngest } from './ingest/ingest-events';
import { ingestRouter } from './ingest/router';
import { openApiRouter } from './openapi/router';
import { targetsRouter } from './targets/router';

/** Everything the API needs, built by server.ts (or by a test). */
export interface AppDependencies {
  config: ApiConfig;
  logger: Logger;
  prisma: PrismaClient;
  /** A `client`-role connection: fails fast while Redis is down. */
  redis: Redis;
  /** Adds delivery jobs over that connection. */
  producer: DeliveryProducer;
  /** The process's metrics, served at /metrics. Default: a registry of its own (`service="events-api"`). */
  metrics?: HeraldMetrics;
}

/** Builds the Express app; does not listen, so tests can drive it with supertest. */
export function createApp(deps: AppDependencies): Express {
  const { config, logger, prisma, redis, producer } = deps;
  const metrics = deps.metrics ?? createMetrics({ service: 'events-api' });
  metrics.watchQueue(producer.queue);
  const tenants = tenantRepository(prisma);
  const apiKeys = apiKeyRepository(prisma);
  const apiKeyCache = createApiKeyCache(apiKeys, { ttlMs: config.apiKeyCacheMs });
  const events = eventRepository(prisma);
  const targets = targetRepository(prisma, credentialsCipherFromConfig(config));
  const history = deliveryHistoryRepository(prisma);
  const outbox = createOutboxPublisher({ producer, deliveries: deliveryRepository(prisma), logger });
  const ingest = createIngest({ store: ingestStore(prisma), publish: outbox.publish, metrics });
  const rateLimit = createRateLimit({
    redis,
    keyPrefix: config.queuePrefix,
    requests: config.rateLimitRequests,
    windowSeconds: config.rateLimitWindowSeconds,
  });

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  app.use(requestLog(logger, metrics));
  app.use(pathGuard);
  app.use(
    plainRouter(
      opsEndpoints({
        checks: [
          { name: 'postgres', check: () => pingDatabase(prisma) },
          { name: 'redis', check: () => pingRedis(redis) },
        ],
        readinessTimeoutMs: config.readinessTimeoutMs,
        metrics,
        token: config.metrics.token,
      }),
    ),
  );
  app.use(openApiRouter());
  app.use(eventsRouter({ apiKeys: apiKeyCache, events, rateLimit }));
  app.use(
    '/internal',
    requireBearerToken(
      config.ingestToken,
      'herald-ingest',
      'The ingest API needs the ingest token: Authorization: Bearer $INGEST_TOKEN (not the admin token, not a merchant API key).',
    ),
    express.json({ limit: config.ingestBodyLimitBytes, strict: false }),
    ingestRouter({ ingest }),
  );
  // Before the bearer-token admin API: a browser opens the dashboard with HTTP Basic.
  app.use(DASHBOARD_PATH, dashboardRouter({ queue: producer.queue, credentials: config.dashboard }));
  app.use(
    '/admin',
    requireBearerToken(
      config.adminToken,
      'herald-admin',
      'The admin API needs the admin token: Authorization: Bearer $ADMIN_TOKEN (not the ingest token, not a merchant API key).',
    ),
    // PATCH bodies are JSON merge patches; clients may label them so (RFC 7396).
    express.json({ limit: '100kb', type: ['application/json', 'application/merge-patch+json'] }),
    adminRouter({ tenants, apiKeys, onKeyRevoked: () => apiKeyCache.forgetAll() }),
    targetsRouter({ targets, urlPolicy: { allowPrivate: config.allowPrivateTargets, hostAllowlist: config.targetHostAllowlist } }),
    deliveriesRouter({ history, replay: createReplay({ history, outbox, producer, logger }) }),
  );
  app.use(notFound);
  app.use(errorHandler(logger));
  return app;
}
