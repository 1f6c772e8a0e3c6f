// The events-api process: config -> logger -> database -> Redis -> app -> listen.
import { loadApiConfig } from '@herald/config';
import { exitOnSignal, exitOnStartupFailure, listenOn } from '@herald/lifecycle';
import { createLogger } from '@herald/logging';
import { startTracing } from '@herald/telemetry';
import { createDeliveryProducer, createRedisConnection } from '@herald/queue';
import { createApp } from './app';
import { closeApiDatabases, createApiDatabases } from './databases';
import { createHttpServer } from './http/http-server';
import { startBanner } from './start-banner';

async function main(): Promise<void> {
  const config = loadApiConfig();
  const logger = createLogger({ level: config.logLevel, service: 'events-api' });
  // Off (no OTEL_* exporter set) by default: then every traced path costs one branch.
  const tracing = startTracing(config.tracing);
  try {
    const databases = createApiDatabases(config);
    const redis = createRedisConnection(config.redisUrl, { role: 'client', name: 'herald:events-api' });
    // Start even while PostgreSQL or Redis is down: /readyz reports it, the orchestrator holds
    // traffic back, and the API serves again as soon as they return (no restart needed).
    redis.on('error', (error) => logger.warn('redis connection error', { error: error.message }));

    const producer = createDeliveryProducer(redis, {
      prefix: config.queuePrefix,
      retry: config.retry,
      timeoutMs: config.enqueueTimeoutMs,
      tracer: tracing.tracer,
    });
    producer.queue.on('error', (error) => logger.warn('delivery queue error', { error: error.message }));
    const app = createApp({ config, logger, databases, redis, producer, tracer: tracing.tracer });
    const server = createHttpServer(app, config.http);
    const port = await listenOn(server, { port: config.port, host: config.host, portSetting: 'PORT' });
    logger.info('events-api listening', { host: config.host ?? 'every interface', port });
    // For a person at a terminal (pnpm start), not for log collection: development only.
    if (config.nodeEnv === 'development') process.stdout.write(`${startBanner(config, { host: config.host, port })}\n`);

    exitOnSignal({
      logger,
      timeoutMs: config.shutdownTimeoutMs,
      stop: async () => {
        // Stop accepting connections, let requests in flight finish, drop idle keep-alive sockets.
        const closed = new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
        server.closeIdleConnections();
        await closed;
        await producer.close();
        await Promise.allSettled([closeApiDatabases(databases), redis.quit()]);
        // Last: the spans of the requests just finished go out too.
        await tracing.shutdown().catch((error: unknown) => logger.warn('could not export the last spans', { error }));
      },
    });
  } catch (error) {
    exitOnStartupFailure(logger, error);
  }
}

main().catch((error: unknown) => {
  // Only configuration errors reach here: there is no logger yet.
  console.error(`events-api: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
