import { createInProcessApi } from '@herald/testing';
import { closeApiDatabases, createApiDatabases, createApp } from '../../src';

/** An events-api on the test database and the real Redis, with its own queue prefix (packages/testing's createInProcessApi). */
export function createTestApi(env: Record<string, string> = {}) {
  return createInProcessApi({ createApiDatabases, closeApiDatabases, createApp }, env);
}

export type TestApi = ReturnType<typeof createTestApi>;
