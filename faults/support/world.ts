import { useWorlds as useWorkerWorlds, type World } from '../../services/delivery-worker/test/support/world';
import { dumpRedisKeys } from './redis-dump';
import { saveRedisDump, saveServiceLog } from './run-dir';

// The delivery-worker's own test world (program, target, events enqueued through the real
// producer), reused so the fault suite wires the worker's dependencies the way its tests do.
export { useHttpRecorders, type World } from '../../services/delivery-worker/test/support/world';

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
  const make = useWorkerWorlds();
  return (env, databaseUrl) => {
    const world = make(env, databaseUrl);
    made.push(world);
    return world;
  };
}
