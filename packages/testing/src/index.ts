import { testDatabaseUrl } from '@herald/config';
import { applyMigrations, dropDatabase, ensureDatabase } from '@herald/db';
import { uniqueId } from './unique-id';

export { testDatabaseUrl, uniqueId };

/** The test database URL pointing at another database on the same server. */
export function databaseUrlFor(name: string): string {
  const url = new URL(testDatabaseUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

/** Creates an empty database for one test; `drop()` removes it. */
export async function createScratchDatabase(prefix = 'herald_scratch'): Promise<{ url: string; drop: () => Promise<void> }> {
  const url = databaseUrlFor(uniqueId(prefix).toLowerCase());
  await ensureDatabase(url);
  return { url, drop: () => dropDatabase(url) };
}

/**
 * A migrated database of the calling test file's own: created before its first test, dropped after
 * its last. Call it at the top of the file; `url` may be read once the tests run.
 */
export function useMigratedDatabase(prefix: string): { readonly url: string } {
  let database: { url: string; drop: () => Promise<void> } | undefined;
  beforeAll(async () => {
    database = await createScratchDatabase(prefix);
    await applyMigrations(database.url);
  });
  afterAll(() => database?.drop());
  return {
    get url(): string {
      if (!database) throw new Error('the database of this file is created in beforeAll: read its url inside a test or hook');
      return database.url;
    },
  };
}

export { acceptsConnections, closedPort, holdPort } from './ports';
export { lastRead, waitFor } from './wait-for';
export { callJson, requestJson, type JsonAnswer, type JsonRequest } from './json-client';

export { runCommand, startCommand, startService, testProcessEnv, type CommandRun, type ServiceProcess, type StartServiceOptions } from './process';
export { removeQueueKeys } from './queue-keys';
export { describeOpsContract, type MountOps } from './ops-contract';
export { getFrom, type AnswerFrom } from './from-address';
export { always, callbacksPerEvent, inTurn, startHttpRecorder, type HttpRecorder, type RecordedRequest, type Reply, type Responder } from './http-recorder';
export { callbackEvent, objectOrderViolations } from './callback-order';
export { metricValue, parseExposition, type Sample } from './prometheus';
export { startSelfSignedServer, type SelfSignedServer } from './tls';
export { storeEvents } from './store-events';
export { killProcess, spawnRedisServer } from './redis-server';
export { startRedisCluster, type ClusterNodeProcess, type PrivateRedisCluster, type RedisClusterOptions, type Shard } from './redis-cluster';
export { useHttpRecorders, useWorlds, World, type SentEvent, type StartWorker } from './worker-world';
export { createInProcessApi, type EventsApiParts } from './in-process-api';
export { startOAuth2orizeMerchant, type OAuth2orizeMerchant } from './oauth2orize-merchant';
export { otlpSpans, type ExportedSpan } from './otlp-spans';
