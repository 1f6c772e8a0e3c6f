import { closeApiDatabases, createApiDatabases, createApp } from '@herald/events-api';
import { createInProcessApi } from '@herald/testing';
import { dumpRedisKeys } from './redis-dump';
import { recordSecret, saveRedisDump, saveServiceLog } from './run-dir';

/** The in-process events-api of a scenario (packages/testing's createInProcessApi, on the events-api's entry point). */
export type TestApi = ReturnType<typeof inProcessApi>;

const inProcessApi = (env: Record<string, string>) => createInProcessApi({ createApiDatabases, closeApiDatabases, createApp }, env);

/**
 * The events-api's in-process test harness, the one its own tests use (the fault suite is a test of
 * the services, and one harness keeps the way the app is wired for tests in one place), plus what scenario 8
 * needs: its bearer tokens are recorded as credentials, and when it is closed its logs and its
 * queue's Redis keys are kept in the run directory.
 */
export function createTenantApi(scenario: string, env: Record<string, string> = {}): TestApi {
  const api = inProcessApi(env);
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
