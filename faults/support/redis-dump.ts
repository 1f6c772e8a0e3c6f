import { createRedisConnection, scanKeys } from '@herald/queue';
import type { Redis } from 'ioredis';

const MAX_KEYS = 50_000;

/**
 * Every key matching `pattern` on that Redis (every master of a cluster) with its whole value
 * (hash fields, list and set members, stream entries), one JSON line per key: job data, return
 * values, failure reasons, stack traces, events, cached OAuth tokens. At most MAX_KEYS keys; a
 * Redis already gone gives nothing.
 */
export async function dumpRedisKeys(redisUrl: string, pattern: string): Promise<string[]> {
  const redis = createRedisConnection(redisUrl, { role: 'client', name: 'faults-dump' });
  redis.on('error', () => undefined);
  try {
    const lines: string[] = [];
    for await (const { server, keys } of scanKeys(redis, pattern)) {
      for (const key of keys) {
        if (lines.length >= MAX_KEYS) return lines;
        lines.push(JSON.stringify({ key, value: await valueAt(server, key) }));
      }
    }
    return lines;
  } catch {
    return [];
  } finally {
    redis.disconnect();
  }
}

async function valueAt(redis: Redis, key: string): Promise<unknown> {
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
