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
 * Resolves once a connection still on its first connect is ready (rejects if that connect fails);
 * resolves at once in any other state. A `client` connection refuses commands until it is
 * connected, so a process that uses Redis right after starting would fail for no reason; a
 * connection that is reconnecting is left alone, so its callers fail at once. Callers bound the
 * wait with their own timeout.
 */
export async function firstConnect(redis: Redis): Promise<void> {
  if (redis.status !== 'connecting' && redis.status !== 'connect') return;
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

/** Resolves when Redis answers a PING (after a first connect, see firstConnect). */
export async function pingRedis(redis: Redis): Promise<void> {
  await firstConnect(redis);
  await redis.ping();
}
