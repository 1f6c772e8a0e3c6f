import { createRedisConnection, pingRedis } from '@herald/queue';

/**
 * Deletes every key of the queues under `prefix` (`<prefix>:*`) on `redisUrl`. A Redis that no
 * longer answers (a test's own server, already stopped) has nothing left to delete.
 */
export async function removeQueueKeys(redisUrl: string, prefix: string): Promise<void> {
  const redis = createRedisConnection(redisUrl, { role: 'client', name: 'test-cleanup' });
  redis.on('error', () => undefined);
  try {
    await pingRedis(redis);
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } catch {
    // Unreachable: nothing to clean up.
  } finally {
    redis.disconnect();
  }
}
