/**
 * What REDIS_URL means: one Redis server (`redis://`, `rediss://`, as ioredis reads them) or a
 * Redis Cluster (`redis+cluster://`, `rediss+cluster://`), and what follows from that for key
 * names. The one place that decides "cluster or single node": the config loaders validate with it,
 * and packages/queue's createRedisConnection builds the matching ioredis client from it.
 *
 * A cluster URL lists seed nodes, comma-separated, after optional credentials:
 * `rediss+cluster://user:password@node-1:6379,node-2:6379`. ioredis asks a seed for the cluster's
 * layout (CLUSTER SLOTS) and then connects to every master it learns of, so one reachable seed is
 * enough (a managed cluster's configuration endpoint, say); more seeds survive a seed being down.
 * The credentials and the TLS of `rediss+` apply to every node. A cluster has only database 0.
 */
import { ConfigError } from './config-error';

/** A host and port of a cluster's seed node. */
export interface RedisNode {
  readonly host: string;
  readonly port: number;
}

/** Where Herald's Redis is: one server (its URL, handed to ioredis as it is), or a cluster. */
export type RedisEndpoint =
  | { readonly kind: 'single'; readonly url: string }
  | {
      readonly kind: 'cluster';
      readonly nodes: readonly RedisNode[];
      readonly username: string | undefined;
      readonly password: string | undefined;
      /** `rediss+cluster://`: TLS to every node. */
      readonly tls: boolean;
    };

const SINGLE_PROTOCOLS = ['redis:', 'rediss:'];
const CLUSTER_URL = /^(rediss?)\+cluster:\/\/(?:([^@/]*)@)?([^/?#@]+)(\/0?)?$/i;
// host:port, the host a name, an IPv4 address or an IPv6 address in brackets.
const NODE = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

/**
 * Parses a REDIS_URL; throws a ConfigError naming `variable` (never echoing the value, which may
 * hold a password) when it is neither form.
 */
export function parseRedisUrl(value: string, variable = 'REDIS_URL'): RedisEndpoint {
  if (/^rediss?\+cluster:/i.test(value)) return parseClusterUrl(value, variable);
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(variable, 'is not a valid URL');
  }
  if (!SINGLE_PROTOCOLS.includes(parsed.protocol)) {
    throw new ConfigError(variable, 'must use redis:// or rediss:// (one server), or redis+cluster:// or rediss+cluster:// (a Redis Cluster)');
  }
  return { kind: 'single', url: value };
}

function parseClusterUrl(value: string, variable: string): RedisEndpoint {
  const match = CLUSTER_URL.exec(value);
  if (!match) {
    throw new ConfigError(
      variable,
      'a cluster URL must be redis+cluster://[user:password@]host:port[,host:port...] (rediss+cluster:// for TLS), with no database other than 0 and no query',
    );
  }
  const [, scheme, userinfo, hostList] = match as unknown as [string, string, string | undefined, string];
  const nodes = hostList.split(',').map((node) => {
    const parts = NODE.exec(node.trim());
    const port = Number(parts?.[2]);
    if (!parts || port < 1 || port > 65_535) throw new ConfigError(variable, `"${node.trim()}" is not a host:port cluster node`);
    return { host: parts[1]!.replace(/^\[|\]$/g, ''), port };
  });
  let username: string | undefined;
  let password: string | undefined;
  if (userinfo !== undefined) {
    const separator = userinfo.indexOf(':');
    try {
      username = decodeURIComponent(separator < 0 ? userinfo : userinfo.slice(0, separator)) || undefined;
      password = separator < 0 ? undefined : decodeURIComponent(userinfo.slice(separator + 1)) || undefined;
    } catch {
      throw new ConfigError(variable, 'holds badly percent-encoded credentials');
    }
  }
  return Object.freeze({ kind: 'cluster', nodes: Object.freeze(nodes), username, password, tls: scheme.toLowerCase() === 'rediss' });
}

/**
 * The key prefix Herald's Redis keys (BullMQ's, the target gate's, the token cache's, the rate
 * limits') start with. On a cluster, QUEUE_PREFIX in braces: a hash tag, so that every key lands in
 * one hash slot, as BullMQ's multi-key scripts and Herald's own (gate, fair share) require. On one
 * server, QUEUE_PREFIX as it is, so existing installs keep their keys.
 */
export function redisKeyPrefix(queuePrefix: string, endpoint: RedisEndpoint): string {
  return endpoint.kind === 'cluster' ? `{${queuePrefix}}` : queuePrefix;
}
