import express, { type Express } from 'express';
import type { Config } from '@herald/config';
import type { PrismaClient } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { Redis } from 'ioredis';
import { pingRedis } from '@herald/queue';
import { healthRouter } from './health/router';
import { errorHandler, notFound } from './http/error-handler';
import { requestLog } from './http/request-log';

/** Everything the API needs, built by server.ts (or by a test). */
export interface AppDependencies {
  config: Config;
  logger: Logger;
  prisma: PrismaClient;
  /** A `client`-role connection: fails fast while Redis is down. */
  redis: Redis;
}

/** Builds the Express app; does not listen, so tests can drive it with supertest. */
export function createApp(deps: AppDependencies): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  app.use(requestLog(deps.logger));
  app.use(
    healthRouter(
      [
        { name: 'postgres', check: () => deps.prisma.$queryRaw`SELECT 1` },
        { name: 'redis', check: () => pingRedis(deps.redis) },
      ],
      deps.config.readinessTimeoutMs,
    ),
  );
  app.use(notFound);
  app.use(errorHandler(deps.logger));
  return app;
}
