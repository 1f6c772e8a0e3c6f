// The delivery-worker process: config -> logger -> database -> Redis, then work until SIGTERM.
// Run as many of these processes as needed (on one machine or many): they coordinate through
// Redis and PostgreSQL row locks only.
import { loadConfig } from '@herald/config';
import { createPrismaClient, deliveryRepository } from '@herald/db';
import { exitOnSignal, exitOnStartupFailure } from '@herald/lifecycle';
import { createLogger } from '@herald/logging';
import { createDeliveryProducer, createRedisConnection } from '@herald/queue';
import { startSweeper } from './sweeper';

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

    // The sweeper enqueues over a fail-fast connection: while Redis is down a sweep fails at once
    // (and releases its row locks) instead of waiting inside a database transaction.
    const sweeperRedis = createRedisConnection(config.redisUrl, { role: 'client', name: 'herald:sweeper' });
    sweeperRedis.on('error', () => undefined);
    const sweeperProducer = createDeliveryProducer(sweeperRedis, { prefix: config.queuePrefix, retry: config.retry, timeoutMs: config.enqueueTimeoutMs });
    sweeperProducer.queue.on('error', (error) => logger.warn('delivery queue error', { error: error.message }));
    const sweeper = startSweeper({ deliveries: deliveryRepository(prisma), producer: sweeperProducer, config: config.sweeper, logger });
    logger.info('delivery-worker ready', { pid: process.pid });

    exitOnSignal({
      logger,
      timeoutMs: config.shutdownTimeoutMs,
      stop: async () => {
        await sweeper.stop();
        await sweeperProducer.close();
        await Promise.allSettled([prisma.$disconnect(), redis.quit(), sweeperRedis.quit()]);
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
