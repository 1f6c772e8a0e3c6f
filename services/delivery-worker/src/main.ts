// The delivery-worker process: config -> logger -> database -> Redis, then work until SIGTERM.
// Run as many of these processes as needed (on one machine or many): they coordinate through
// Redis only.
import { loadConfig } from '@herald/config';
import { createPrismaClient } from '@herald/db';
import { exitOnSignal, exitOnStartupFailure } from '@herald/lifecycle';
import { createLogger } from '@herald/logging';
import { createRedisConnection } from '@herald/queue';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ level: config.logLevel, service: 'delivery-worker' });
  try {
    const prisma = createPrismaClient(config.databaseUrl);
    const redis = createRedisConnection(config.redisUrl, { role: 'worker', name: 'herald:delivery-worker' });
    redis.on('error', (error) => logger.warn('redis connection error', { error: error.message }));
    // Refuse to start half-connected: both stores must answer once before work begins.
    await prisma.$queryRaw`SELECT 1`;
    await redis.ping();
    logger.info('delivery-worker ready', { pid: process.pid });

    exitOnSignal({
      logger,
      timeoutMs: config.shutdownTimeoutMs,
      stop: async () => {
        await Promise.allSettled([prisma.$disconnect(), redis.quit()]);
      },
    });
  } catch (error) {
    exitOnStartupFailure(logger, error);
  }
}

main().catch((error: unknown) => {
  console.error(`delivery-worker: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
