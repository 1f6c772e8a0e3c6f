import { startFakeTokenEndpoint, type FakeTokenEndpoint } from './fake-token-endpoint';
import { RedisScope } from './redis-scope';

/** What each test gets: its own key prefix on the real Redis and its own fake token endpoint. */
export interface TestEnvironment {
  readonly redis: RedisScope;
  readonly endpoint: FakeTokenEndpoint;
}

/** Registers hooks that give every test of the enclosing describe a fresh environment and close it after. */
export function useTestEnvironment(): TestEnvironment {
  const current = {} as { redis: RedisScope; endpoint: FakeTokenEndpoint };
  beforeEach(async () => {
    current.redis = new RedisScope();
    current.endpoint = await startFakeTokenEndpoint();
  });
  afterEach(async () => {
    await current.endpoint.close();
    await current.redis.close();
  });
  return current;
}
