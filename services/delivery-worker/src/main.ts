// The delivery-worker process: config -> logger -> database -> Redis, then work until SIGTERM.
// Run as many of these processes as needed (on one machine or many): they coordinate through
// Redis (the BullMQ queue, the OAuth token cache) and PostgreSQL row locks only.
// Production sizes its V8 heap on the command line (scripts/bundles.ts).
import { loadWorkerConfig } from '@herald/config';
import {
  closeDatabasePool,
  createDatabasePool,
  credentialsCipherFromConfig,
  deliveryRepository,
  objectOrderRepository,
  fillMissingSigningSecrets,
  partitionMaintenance,
  pingDatabase,
} from '@herald/db';
import { createFailedAuthThrottle, exitOnSignal, exitOnStartupFailure } from '@herald/lifecycle';
import { createLogger } from '@herald/logging';
import { startTracing } from '@herald/telemetry';
import { createMetrics } from '@herald/metrics';
import { startQueueLossWatch, startReconciler, startSweeper } from '@herald/outbox';
import { countBreakers, createDeliveryProducer, createRedisConnection, pingRedis } from '@herald/queue';
import { startMonitoringServer } from './monitoring-server';
import { startPartitionMaintenance } from './partition-maintenance';
import { startDeliveryWorker } from './worker';

async function main(): Promise<void> {
  const config = loadWorkerConfig();
  const logger = createLogger({ level: config.logLevel, service: 'delivery-worker' });
  // Off (no OTEL_* exporter set) by default: then a job costs one branch more.
  const tracing = startTracing(config.tracing);
  try {
    // The worker's statements look deliveries, targets and events up by key: planned once each.
    const pool = createDatabasePool(config.databaseUrl, { genericPlans: true });
    const redis = createRedisConnection(config.redisUrl, { role: 'worker', name: 'herald:delivery-worker' });
    redis.on('error', (error) => logger.warn('redis connection error', { error: error.message }));
    // Refuse to start half-connected: both stores must answer once before work begins.
    await pingDatabase(pool);
    await redis.ping();

    // The sweeper and the reconciler enqueue over a fail-fast connection: while Redis is down a
    // pass fails at once (and releases its row locks) instead of waiting inside a transaction.
    const sweeperRedis = createRedisConnection(config.redisUrl, { role: 'client', name: 'herald:sweeper' });
    sweeperRedis.on('error', () => undefined);
    const sweeperProducer = createDeliveryProducer(sweeperRedis, { prefix: config.queuePrefix, retry: config.retry, timeoutMs: config.enqueueTimeoutMs });
    sweeperProducer.queue.on('error', (error) => logger.warn('delivery queue error', { error: error.message }));
    // The worker alone exports the gauges of shared state: summed over the deployment's processes, nothing counts twice.
    const metrics = createMetrics({ service: 'delivery-worker', sharedState: true });
    metrics.watchQueue(sweeperProducer.queue);
    metrics.watchBreakers(() => countBreakers(sweeperRedis, config.queuePrefix));
    // Before any work starts: a port already taken stops the process while it holds no job.
    const monitoring = await startMonitoringServer({
      port: config.metrics.port,
      host: config.metrics.host,
      movesOnWhenTaken: config.metrics.movesOnWhenTaken,
      metrics,
      // The fail-fast connection: /readyz must answer within its timeout while Redis is down.
      checks: [
        { name: 'postgres', check: () => pingDatabase(pool) },
        { name: 'redis', check: () => pingRedis(sweeperRedis) },
      ],
      readinessTimeoutMs: config.readinessTimeoutMs,
      token: config.metrics.token,
      failedAuth: createFailedAuthThrottle(config.authFailures),
    });
    logger.info('metrics listening', { host: config.metrics.host ?? 'every interface', port: monitoring.port });
    const deliveries = deliveryRepository(pool);
    const sweeper = startSweeper({ deliveries, producer: sweeperProducer, config: config.sweeper, logger, metrics });
    const reconciler = startReconciler({
      deliveries,
      order: objectOrderRepository(pool),
      producer: sweeperProducer,
      config: config.reconciler,
      logger,
      metrics,
    });
    // A Redis that comes back empty is noticed within RECONCILER_LOSS_CHECK_MS, and every pending
    // delivery is checked then, rather than after RECONCILER_STALE_AFTER_MS.
    let recovering: Promise<unknown> = Promise.resolve();
    const lossWatch = startQueueLossWatch({
      redis: sweeperRedis,
      queue: sweeperProducer.queue,
      intervalMs: config.reconciler.lossCheckMs,
      logger,
      onLoss: (lostAt) => {
        recovering = recovering.then(() =>
          reconciler.reconcileSince(lostAt).catch((error: unknown) => {
            logger.warn('reconciling after the queue was lost failed; the periodic passes go on', {
              error: error instanceof Error ? error.message : String(error),
            });
          }),
        );
      },
    });
    const maintenance = startPartitionMaintenance({ partitions: partitionMaintenance(pool), config: config.partitions, logger, metrics });

    // Once, before the first job: a target stored before signatures gets its secret here, so that
    // every callback is signed while the worker's load of a target only reads.
    const signed = await fillMissingSigningSecrets(pool, credentialsCipherFromConfig(config));
    if (signed > 0) logger.info('gave targets stored before signatures their signing secrets', { targets: signed });
    const worker = startDeliveryWorker({ config, pool, connection: redis, logger, metrics, tracer: tracing.tracer });

    // Registered before "ready" is logged, so that a signal sent on seeing it is always handled.
    exitOnSignal({
      logger,
      timeoutMs: config.shutdownTimeoutMs,
      stop: async () => {
        // The worker takes no new job and waits for the callbacks in flight; a job still running
        // when SHUTDOWN_TIMEOUT_MS runs out is cut off, and BullMQ's stalled-job check hands it to
        // another worker once its lock expires (WORKER_LOCK_DURATION_MS).
        await Promise.all([worker.close(), sweeper.stop(), lossWatch.stop(), reconciler.stop(), maintenance.stop(), monitoring.close()]);
        await recovering;
        await sweeperProducer.close();
        await Promise.allSettled([closeDatabasePool(pool), redis.quit(), sweeperRedis.quit()]);
        // Last: the spans of the jobs just finished go out too.
        await tracing.shutdown().catch((error: unknown) => logger.warn('could not export the last spans', { error }));
      },
    });
    logger.info('delivery-worker ready', { pid: process.pid, concurrency: config.worker.concurrency });
  } catch (error) {
    exitOnStartupFailure(logger, error);
  }
}

main().catch((error: unknown) => {
  console.error(`delivery-worker: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
