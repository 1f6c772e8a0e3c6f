import { startDeliveryWorker, type DeliveryWorker } from '@herald/delivery-worker';
import { useWorlds as useTestingWorlds, type World as TestingWorld } from '@herald/testing';
import { dumpRedisKeys } from './redis-dump';
import { saveRedisDump, saveServiceLog } from './run-dir';

// The delivery-worker's test world (program, target, events enqueued through the real producer),
// the one its own tests use, so the fault suite wires the worker's dependencies the way they do.
export { useHttpRecorders } from '@herald/testing';
export type World = TestingWorld<DeliveryWorker>;

/**
 * The worker tests' `useWorlds`, plus: before each world is closed, its in-process workers' logs
 * and every Redis key of its queue are kept in the run directory for scenario 8's search.
 */
export function useWorlds(scenario: string): (env?: Record<string, string>, databaseUrl?: string) => World {
  const made: World[] = [];
  // Registered before the worker tests' own afterEach, so it runs first (Jest keeps the order).
  afterEach(async () => {
    for (const world of made.splice(0)) {
      saveServiceLog(`${scenario}-in-process-worker`, world.logs());
      saveRedisDump(scenario, await dumpRedisKeys(world.config.redisUrl, `${world.config.queuePrefix}:*`));
    }
  });
  const make = useTestingWorlds(startDeliveryWorker);
  return (env, databaseUrl) => {
    const world = make(env, databaseUrl);
    made.push(world);
    return world;
  };
}
