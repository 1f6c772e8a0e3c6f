import { createRedisConnection, scanKeys } from '@herald/queue';

/**
 * Deletes every key of the queues under `prefix` (`<prefix>:*`) on `redisUrl` (every master of a
 * cluster). A Redis that no longer answers (a test's own server, already stopped) has nothing left
 * to delete.
 */
export async function removeQueueKeys(redisUrl: string, prefix: string): Promise<void> {
  const redis = createRedisConnection(redisUrl, { role: 'client', name: 'test-cleanup' });
  redis.on('error', () => undefined);
  try {
    for await (const { server, keys } of scanKeys(redis, `${prefix}:*`)) {
      // One DEL per key: on a cluster, one DEL of keys from several hash slots is refused.
      await server.pipeline(keys.map((key) => ['del', key])).exec();
    }
  } catch {
    // Unreachable: nothing to clean up.
  } finally {
    redis.disconnect();
  }
}
