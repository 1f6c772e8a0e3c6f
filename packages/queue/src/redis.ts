import { parseRedisUrl } from '@herald/config';
import { Cluster, Redis } from 'ioredis';

/**
 * A connection to Herald's Redis: one server, or a Redis Cluster (REDIS_URL `redis+cluster://`).
 * Everything that talks to Redis takes this type and uses only what both clients offer; whether
 * it is a cluster is decided once, by createRedisConnection.
 */
export type RedisConnection = Redis | Cluster;

export interface RedisConnectionOptions {
  /**
   * `worker`: commands wait for a reconnect (BullMQ workers require maxRetriesPerRequest: null).
   * `client`: commands fail at once while Redis is unreachable, so an HTTP request never hangs on it.
   */
  role: 'worker' | 'client';
  /** Name shown by `CLIENT LIST`, to tell Herald's connections apart. */
  name?: string;
}

/**
 * An ioredis connection for the given role: a `Redis` for a `redis://` or `rediss://` URL, a
 * `Cluster` for `redis+cluster://` or `rediss+cluster://` (see @herald/config's parseRedisUrl).
 */
export function createRedisConnection(redisUrl: string, options: RedisConnectionOptions): RedisConnection {
  const endpoint = parseRedisUrl(redisUrl);
  const common = { connectionName: options.name };
  const failFast = { maxRetriesPerRequest: 1, connectTimeout: 2_000, disconnectTimeout: 500 };
  if (endpoint.kind === 'single') {
    return options.role === 'worker'
      ? new Redis(endpoint.url, { ...common, lazyConnect: false, maxRetriesPerRequest: null })
      : new Redis(endpoint.url, { ...common, lazyConnect: false, ...failFast, enableOfflineQueue: false });
  }
  return new Cluster(
    endpoint.nodes.map((node) => ({ host: node.host, port: node.port })),
    {
      lazyConnect: false,
      // The cluster client queues commands while it learns the layout or follows a failover; a
      // `client` connection refuses them instead, like a single one.
      enableOfflineQueue: options.role === 'worker',
      redisOptions: {
        ...common,
        ...(options.role === 'worker' ? { maxRetriesPerRequest: null } : failFast),
        username: endpoint.username,
        password: endpoint.password,
        ...(endpoint.tls ? { tls: {} } : {}),
      },
      // With TLS, connect to the names the cluster announces rather than their addresses, so that
      // the certificate (issued for the names, as managed services do) matches.
      ...(endpoint.tls ? { dnsLookup: (address: string, callback: (error: null, address: string) => void) => callback(null, address) } : {}),
    },
  );
}

/**
 * Resolves once a connection still on its first connect is ready (rejects if that connect fails);
 * resolves at once in any other state. A `client` connection refuses commands until it is
 * connected, so a process that uses Redis right after starting would fail for no reason; a
 * connection that is reconnecting is left alone, so its callers fail at once. Callers bound the
 * wait with their own timeout.
 */
export async function firstConnect(redis: RedisConnection): Promise<void> {
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
export async function pingRedis(redis: RedisConnection): Promise<void> {
  await firstConnect(redis);
  await redis.ping();
}

/**
 * The keys matching a SCAN pattern, a page at a time, with the server that holds them: on a
 * cluster SCAN walks one node, so every master is walked. For tools and tests (cleanup, dumps),
 * not for request paths.
 */
export async function* scanKeys(redis: RedisConnection, pattern: string): AsyncGenerator<{ server: Redis; keys: string[] }> {
  await firstConnect(redis);
  const servers = redis instanceof Cluster ? redis.nodes('master') : [redis];
  for (const server of servers) {
    let cursor = '0';
    do {
      const [next, keys] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) yield { server, keys };
    } while (cursor !== '0');
  }
}
