import { startService, useWorlds as useTestingWorlds, type ServiceProcess, type World as TestingWorld } from '@herald/testing';
import { startDeliveryWorker, type DeliveryWorker } from '../../src';

export { useHttpRecorders, type SentEvent } from '@herald/testing';

/** packages/testing's World, whose workers are this service's DeliveryWorker. */
export type World = TestingWorld<DeliveryWorker>;

/** Registers an afterEach that closes every World the test made, even when it failed. */
export function useWorlds(): (env?: Record<string, string>, databaseUrl?: string) => World {
  return useTestingWorlds(startDeliveryWorker);
}

/**
 * Registers an afterEach that kills the delivery-worker processes its tests started. The function
 * it returns starts `count` of them on a world's queue and `databaseUrl` (NODE_ENV test, LOG_LEVEL
 * http, a free metrics port, and `env`), and resolves once every one is ready: on a loaded machine
 * one process can take seconds longer to start, and must not find the queue drained by another.
 */
export function useWorkerProcesses(database: { readonly url: string }): (w: World, count: number, env?: Record<string, string>) => Promise<ServiceProcess[]> {
  const started: ServiceProcess[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((service) => service.stop('SIGKILL')));
  });
  return async (w, count, env = {}) => {
    const processEnv = { NODE_ENV: 'test', LOG_LEVEL: 'http', DATABASE_URL: database.url, METRICS_PORT: '0', QUEUE_PREFIX: w.config.queuePrefix, ...env };
    const services = Array.from({ length: count }, () => startService('services/delivery-worker/src/main.ts', processEnv));
    started.push(...services);
    await Promise.all(services.map((service) => service.waitForLog('delivery-worker ready')));
    return services;
  };
}
