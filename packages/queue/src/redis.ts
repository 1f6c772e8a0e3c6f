import { Redis } from 'ioredis';

export interface RedisConnectionOptions {
  /**
   * `worker`: commands wait for a reconnect (BullMQ workers require maxRetriesPerRequest: null).
   * `client`: commands fail at once while Redis is unreachable, so an HTTP request never hangs on it.
   */
  role: 'worker' | 'client';
  /** Name shown by `CLIENT LIST`, to tell Herald's connections apart. */
  name?: string;
}

/** An ioredis connection for the given role. */
export function createRedisConnection(redisUrl: string, options: RedisConnectionOptions): Redis {
  const common = { connectionName: options.name, lazyConnect: false };
  return options.role === 'worker'
    ? new Redis(redisUrl, { ...common, maxRetriesPerRequest: null })
    : new Redis(redisUrl, { ...common, maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2_000, disconnectTimeout: 500 });
}

/**
 * Resolves when Redis answers a PING. A `client` connection refuses commands until it is
 * connected, so a connection still on its first connect is given the chance to finish (callers
 * bound the wait with their own timeout); one that is reconnecting fails at once.
 */
export async function pingRedis(redis: Redis): Promise<void> {
  if (redis.status === 'connecting' || redis.status === 'connect') {
    await new Promise<void>((resolve, reject) => {
      const settle = (error?: Error): void => {
        redis.off('ready', settle);
        redis.off('error', settle);
        if (error) reject(error);
        else resolve();
      };
      redis.once('ready', settle);
      redis.once('error', settle);
    });
  }
  await redis.ping();
}
