import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { withTimeout } from '@herald/domain';
import type { ApiConfig } from '@herald/config';
import {
  apiKeyPrefixOf,
  apiKeyRepository,
  credentialsCipherFromConfig,
  deliveryHistoryRepository,
  deliveryRepository,
  eventRepository,
  ingestStore,
  pingDatabase,
  portalSessionRepository,
  recoveryRepository,
  targetRepository,
  tenantRepository,
} from '@herald/db';
import { createFailedAuthThrottle, opsEndpoints } from '@herald/lifecycle';
import type { Logger } from '@herald/logging';
import { createMetrics, type HeraldMetrics } from '@herald/metrics';
import { createCallbackSender } from '@herald/callbacks';
import { createConnectGuard, createOutboundClient, type AddressPolicy } from '@herald/outbound';
import { createOutboxPublisher, createRecovery, createReplay } from '@herald/outbox';
import type { Tracer } from '@herald/telemetry';
import { pingRedis, readTargetHealth, type DeliveryProducer, type RedisConnection } from '@herald/queue';
import { adminRouter } from './admin/router';
import { createApiKeyCache } from './auth/api-key-cache';
import { requireBearerToken } from './auth/bearer-token';
import { createKnownKeyPrefixes } from './auth/known-key-prefixes';
import { limitUnknownKeyLookups } from './auth/unknown-key-limit';
import { DASHBOARD_PATH, dashboardRouter } from './dashboard/router';
import type { ApiDatabases } from './databases';
import { replayAnswering } from './deliveries/replay';
import { merchantDeliveriesRouter } from './deliveries/merchant-router';
import { deliveriesRouter } from './deliveries/router';
import { listEvents } from './events/router';
import { errorHandler, notFound } from './http/error-handler';
import type { ExpensiveReads } from './http/expensive-reads';
import { createKeyConcurrency } from './http/key-concurrency';
import { createKeyTimeBudget } from './http/key-time-budget';
import { pathGuard } from './http/request-guards';
import { plainRouter } from './http/plain-adapter';
import { createRateLimit } from './http/rate-limit';
import { installRequestLog } from './http/request-log';
import { createIngest } from './ingest/ingest-events';
import { MAX_BODY_DEPTH, refuseMalformedJson } from './http/request-guards';
import { ingestRouter } from './ingest/router';
import { openApiRouter } from './openapi/router';
import { portalLinksRouter } from './portal/links-router';
import { portalRouter } from './portal/router';
import { createRecoveries } from './recoveries/recoveries';
import { merchantRecoveriesRouter } from './recoveries/router';
import { merchantTargetRouter } from './targets/merchant-target-router';
import { targetsRouter } from './targets/router';
import { signingSecretRouter } from './targets/signing-secret-router';
import type { TargetOutbound } from './targets/target-outbound';

/** Everything the API needs, built by server.ts (or by a test). */
export interface AppDependencies {
  config: ApiConfig;
  logger: Logger;
  /** One pool per class of work (see createApiDatabases). */
  databases: ApiDatabases;
  /** A `client`-role connection: fails fast while Redis is down. */
  redis: RedisConnection;
  /** Adds delivery jobs over that connection. */
  producer: DeliveryProducer;
  /** The process's metrics, served at /metrics. Default: a registry of its own (`service="events-api"`). */
  metrics?: HeraldMetrics;
  /** Makes the spans of requests and of the ingest (see @herald/telemetry); none when undefined, tracing off. */
  tracer?: Tracer | undefined;
}

/** Builds the Express app; does not listen, so tests can drive it with supertest. */
export function createApp(deps: AppDependencies): Express {
  const { config, logger, databases, redis, producer, tracer } = deps;
  // The queue's job counts are shared state: the delivery-worker exports them, not the API too.
  const metrics = deps.metrics ?? createMetrics({ service: 'events-api' });
  // Each repository runs on the pool of its class of work: merchant reads can never take the
  // connections of the ingest, of the admin API or of /readyz.
  const tenants = tenantRepository(databases.admin);
  const apiKeys = apiKeyRepository(databases.admin);
  const keyPrefixes = createKnownKeyPrefixes(apiKeyRepository(databases.ingest), {
    // As often as the cache's answers expire, and at most once a second.
    reloadMs: Math.max(config.apiKeyCacheMs, 1_000),
    onReloadError: (error) => logger.warn('could not reload the API key prefixes; the old ones stay in use', { error }),
  });
  const keyLookups = limitUnknownKeyLookups(apiKeyRepository(databases.ingest), {
    perSecond: config.unknownApiKeysPerSecond,
    perAddress: config.unknownApiKeysPerAddress,
    perPrefix: config.unknownApiKeysPerPrefix,
    prefixes: keyPrefixes,
  });
  const apiKeyCache = createApiKeyCache(keyLookups, {
    ttlMs: config.apiKeyCacheMs,
    maxEntries: config.apiKeyCacheMaxEntries,
    maxBytes: config.apiKeyCacheMaxBytes,
  });
  const failedAuth = createFailedAuthThrottle(config.authFailures);
  const events = eventRepository(databases.merchantReads);
  const cipher = credentialsCipherFromConfig(config);
  const targets = targetRepository(databases.admin, cipher);
  const history = deliveryHistoryRepository(databases.admin);
  const outbox = createOutboxPublisher({
    producer,
    deliveries: deliveryRepository(databases.ingest),
    logger,
    onEnqueue: (outcome, count) => metrics.deliveriesEnqueued(outcome, count),
  });
  const ingest = createIngest({ store: ingestStore(databases.ingest), publish: outbox.publish, metrics, eventMaxBytes: config.eventMaxBytes, tracer });
  const rateLimit = createRateLimit({
    redis,
    keyPrefix: config.queuePrefix,
    requests: config.rateLimitRequests,
    windowSeconds: config.rateLimitWindowSeconds,
    syncMs: config.rateLimitSyncMs,
  });

  // A target's delivery health from Redis, as the admin and the merchant API show it, bounded in time.
  const targetHealth = (targetId: string) =>
    withTimeout(readTargetHealth(redis, config.queuePrefix, targetId), config.readinessTimeoutMs, 'the target health read timed out');

  const urlPolicy: AddressPolicy = { allowPrivate: config.allowPrivateTargets, hostAllowlist: config.targetHostAllowlist };

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  // Answers hold one tenant's data or an operator's, chosen by a header (x-api-key, a bearer
  // token) that shared caches do not key on: no cache may store them, and with nothing stored
  // no validator is needed. The API reference's and the dashboard's static files set their own.
  app.set('etag', false);
  installRequestLog(app, logger, metrics, tracer);
  app.use(noStore, noFraming);
  app.use(pathGuard);
  // The merchant API first: GET /events is the hot path, and every router before it is one more
  // match per request.
  // One key's expensive reads share one set of turns and one time budget across the merchant API's routes.
  const merchantReads: ExpensiveReads = {
    concurrency: createKeyConcurrency({
      perKey: config.eventsList.concurrencyPerKey,
      total: config.eventsList.concurrencyTotal,
      queueWaitMs: config.eventsList.queueWaitMs,
    }),
    timeBudget: createKeyTimeBudget({
      msPerSecond: config.eventsList.msPerSecondPerKey,
      burstMs: config.queryClasses.merchantReads.statementTimeoutMs,
      waitMs: config.eventsList.queueWaitMs,
    }),
  };
  app.get('/events', listEvents({ apiKeys: apiKeyCache, events, rateLimit, limits: merchantReads, maxSkip: config.eventsList.maxSkip }));
  app.use(
    merchantDeliveriesRouter({
      apiKeys: apiKeyCache,
      rateLimit,
      history: deliveryHistoryRepository(databases.merchantReads),
      limits: merchantReads,
      maxSkip: config.eventsList.maxSkip,
    }),
  );
  // The merchant's recoveries run on the merchant pool, within the key's turns: they read its events.
  const recoveryStore = recoveryRepository(databases.merchantReads);
  const recoveries = createRecoveries({
    recover: createRecovery({ recoveries: recoveryStore, producer, publisher: outbox, logger }),
    store: recoveryStore,
    maxDays: config.recovery.maxDays,
    maxDeliveries: config.recovery.maxDeliveries,
  });
  app.use(merchantRecoveriesRouter({ apiKeys: apiKeyCache, rateLimit, recoveries, limits: merchantReads }));
  const merchantTarget = {
    targets: targetRepository(databases.merchantReads, cipher),
    health: targetHealth,
    autoDisableAfterMs: config.targetAutoDisableAfterMs,
    egressAddresses: config.egressAddresses,
  };
  app.use(merchantTargetRouter({ apiKeys: apiKeyCache, rateLimit, ...merchantTarget }));
  app.use(
    plainRouter(
      opsEndpoints({
        checks: [
          { name: 'postgres', check: () => pingDatabase(databases.readiness) },
          { name: 'redis', check: () => pingRedis(redis) },
        ],
        readinessTimeoutMs: config.readinessTimeoutMs,
        metrics,
        token: config.metrics.token,
        failedAuth,
      }),
    ),
  );
  app.use(openApiRouter({ publicUrl: config.publicUrl }));
  app.use(
    '/internal',
    requireBearerToken(
      config.ingestToken,
      'herald-ingest',
      'The ingest API needs the ingest token: Authorization: Bearer $INGEST_TOKEN (not the admin token, not a merchant API key).',
      failedAuth,
    ),
    // The depth and the UTF-8 are checked on the raw bytes, before parsing: a hostile body costs
    // one pass over it, and a malformed byte is refused by name instead of stored as U+FFFD.
    express.json({ limit: config.ingestBodyLimitBytes, strict: false, verify: refuseMalformedJson(MAX_BODY_DEPTH) }),
    ingestRouter({ ingest }),
  );
  // The merchant portal: the merchant API's reads, on its pools, for a browser session a support
  // link opened (no API key). The signing secret is read on the admin pool, as the admin API's.
  const portalSessions = portalSessionRepository(databases.admin);
  app.use(
    portalRouter({
      sessions: portalSessions,
      tenants,
      events,
      history: deliveryHistoryRepository(databases.merchantReads),
      target: merchantTarget,
      signingSecret: (owner) => targets.signingSecret(owner),
      limits: merchantReads,
      recoveries,
      recoveryMaxDays: config.recovery.maxDays,
      maxSkip: config.eventsList.maxSkip,
      sessionTtlSeconds: config.portal.sessionTtlSeconds,
      secureCookie: config.portal.secureCookie,
    }),
  );
  // Before the bearer-token admin API: a browser opens the dashboard with HTTP Basic.
  app.use(
    DASHBOARD_PATH,
    dashboardRouter({ queue: producer.queue, waitingFor: (ids) => history.waitingFor(ids), credentials: config.dashboard, failedAuth, logger, metrics }),
  );
  app.use(
    '/admin',
    requireBearerToken(
      config.adminToken,
      'herald-admin',
      'The admin API needs the admin token: Authorization: Bearer $ADMIN_TOKEN (not the ingest token, not a merchant API key).',
      failedAuth,
    ),
    // PATCH bodies are JSON merge patches; clients may label them so (RFC 7396).
    express.json({ limit: '100kb', type: ['application/json', 'application/merge-patch+json'] }),
    adminRouter({
      tenants,
      apiKeys,
      egressAddresses: config.egressAddresses,
      onKeyCreated: (key) => keyPrefixes.add(apiKeyPrefixOf(key)),
      onKeyRevoked: () => apiKeyCache.forgetAll(),
    }),
    targetsRouter({
      targets,
      urlPolicy,
      outbound: targetOutbound(config, urlPolicy, redis, metrics),
      logger,
      health: targetHealth,
      deliveryDefaults: config.deliveryDefaults,
    }),
    signingSecretRouter({ targets, rotationGraceSeconds: config.signingSecretRotationGraceSeconds }),
    portalLinksRouter({ sessions: portalSessions, tenants, linkTtlSeconds: config.portal.linkTtlSeconds, publicUrl: config.publicUrl }),
    deliveriesRouter({ history, replay: replayAnswering(createReplay({ history, publisher: outbox, producer, logger })), replayMaxDays: config.replayMaxDays }),
  );
  app.use(notFound);
  app.use(errorHandler(logger));
  return app;
}

function noStore(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Cache-Control', 'no-store');
  next();
}

/**
 * No page of the API (the dashboard, whose buttons retry and remove jobs; the API reference) may be
 * shown inside another site's frame, where a click could be stolen: the CSP rule for today's
 * browsers, X-Frame-Options for older ones.
 */
function noFraming(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Content-Security-Policy', "frame-ancestors 'none'");
  res.setHeader('X-Frame-Options', 'DENY');
  next();
}

/**
 * How the API sends to merchants on an admin's request, set up as the delivery worker's: the same
 * address policy at connect time, limits, token cache (Redis keys under QUEUE_PREFIX, keyed by
 * SECRETS_KEY) and token-request metric, so that a token checked here serves the worker.
 */
function targetOutbound(config: ApiConfig, urlPolicy: AddressPolicy, redis: RedisConnection, metrics: HeraldMetrics): TargetOutbound {
  const guard = createConnectGuard(urlPolicy);
  return {
    auth: {
      redis,
      keyPrefix: `${config.queuePrefix}:`,
      tokenCacheSecret: config.secretsKey,
      tokenRequestTimeoutMs: config.callback.tokenTimeoutMs,
      defaultTokenLifetimeSeconds: config.callback.tokenDefaultLifetimeSeconds,
      onTokenRequest: (outcome) => metrics.oauthTokenRequested(outcome),
      outbound: createOutboundClient({ guard, transport: 'axios' }),
    },
    send: createCallbackSender({
      timeoutMs: config.callback.timeoutMs,
      responseMaxBytes: config.callback.responseMaxBytes,
      outbound: createOutboundClient({ guard }),
    }),
  };
}
