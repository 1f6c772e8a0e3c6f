import { Redis } from 'ioredis';

const MAX_KEYS = 50_000;

/**
 * Every key matching `pattern` on that Redis with its whole value (hash fields, list and set
 * members, stream entries), one JSON line per key: job data, return values, failure reasons,
 * stack traces, events, cached OAuth tokens. At most MAX_KEYS keys; a Redis already gone gives
 * nothing.
 */
export async function dumpRedisKeys(redisUrl: string, pattern: string): Promise<string[]> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 2_000, lazyConnect: true });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    const lines: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1_000);
      cursor = next;
      for (const key of keys) {
        if (lines.length >= MAX_KEYS) return lines;
        lines.push(JSON.stringify({ key, value: await valueOf(redis, key) }));
      }
    } while (cursor !== '0');
    return lines;
  } catch {
    return [];
  } finally {
    redis.disconnect();
  }
}

async function valueOf(redis: Redis, key: string): Promise<unknown> {
  switch (await redis.type(key)) {
    case 'string':
      return redis.get(key);
    case 'hash':
      return redis.hgetall(key);
    case 'list':
      return redis.lrange(key, 0, -1);
    case 'set':
      return redis.smembers(key);
    case 'zset':
      return redis.call('ZRANGE', key, '0', '-1', 'WITHSCORES');
    case 'stream':
      return redis.xrange(key, '-', '+');
    default:
      return null;
  }
}
