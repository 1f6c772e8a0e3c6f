import { createTestApi, type TestApi } from '../../services/events-api/test/support/api';
import { dumpRedisKeys } from './redis-dump';
import { recordSecret, saveRedisDump, saveServiceLog } from './run-dir';

export type { TestApi };

/**
 * The events-api's own in-process test harness, reused (the fault suite is a test of the services,
 * and one harness keeps the way the app is wired for tests in one place), plus what scenario 8
 * needs: its bearer tokens are recorded as credentials, and when it is closed its logs and its
 * queue's Redis keys are kept in the run directory.
 */
export function createTenantApi(scenario: string, env: Record<string, string> = {}): TestApi {
  const api = createTestApi(env);
  recordSecret('admin token', api.config.adminToken);
  recordSecret('ingest token', api.config.ingestToken);
  const close = api.close;
  return {
    ...api,
    async close() {
      saveServiceLog(`${scenario}-in-process-api`, api.logs());
      saveRedisDump(scenario, await dumpRedisKeys(api.config.redisUrl, `${api.config.queuePrefix}:*`));
      await close();
    },
  };
}
