import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { closedPort } from './ports';
import { killProcess, spawnRedisServer } from './redis-server';
import { waitFor } from './wait-for';
import { selfSignedCertificate } from './tls';
import { Redis } from 'ioredis';

/** One redis-server of a private cluster. */
export interface ClusterNodeProcess {
  readonly port: number;
  readonly child: ChildProcess;
}

/** A master of the cluster and its replica. */
export interface Shard {
  readonly master: number;
  readonly replica: number;
}

/** How clients reach the nodes: in the clear or over TLS, with or without a password. */
export interface RedisClusterOptions {
  /**
   * TLS only (`--port 0 --tls-port`, the cluster bus and replication over TLS too), with a
   * self-signed certificate for 127.0.0.1 (`caFile`): clients must trust it, e.g. through
   * NODE_EXTRA_CA_CERTS. Default false.
   */
  readonly tls?: boolean;
  /** `requirepass` (and `masterauth`) of every node. Default none. */
  readonly password?: string;
}

/**
 * A Redis Cluster of the test's own on 127.0.0.1: three masters with a replica each, as
 * `redis-cli --cluster create` lays them out, without persistence, in a temporary directory.
 */
export interface PrivateRedisCluster {
  /** REDIS_URL for Herald: every node as a seed (`rediss+cluster://` and the password if so started). */
  readonly url: string;
  /** The certificate clients must trust (a TLS cluster), else undefined. */
  readonly caFile: string | undefined;
  readonly nodes: readonly ClusterNodeProcess[];
  /** The master serving `key`'s hash slot now, and its replica (0: none left). */
  shardOf(key: string): Promise<Shard>;
  /**
   * A manual failover of the shard (CLUSTER FAILOVER on its replica: the replica catches up with
   * the master, then takes its slots; no acknowledged write is lost). Resolves once the replica is
   * master and every node sees the cluster as ok.
   */
  failover(shard: Shard): Promise<void>;
  /**
   * Kills the shard's master (SIGKILL): the other masters mark it failed after the node timeout
   * and its replica is elected in its place (writes it had not yet replicated are lost, as in a
   * real crash). Resolves once the replica is master and the surviving nodes see the cluster as ok.
   */
  killMaster(shard: Shard): Promise<void>;
  /** Stops every node (SIGKILL) and removes the directory. */
  remove(): Promise<void>;
}

const MASTERS = 3;
const NODE_TIMEOUT_MS = 1_000;

/** How this helper reaches the nodes itself (administration), as RedisClusterOptions say. */
interface NodeAccess {
  readonly tls?: { readonly ca: Buffer; readonly caFile: string; readonly certFile: string; readonly keyFile: string };
  readonly password?: string;
}

/** Starts six redis-server processes on free ports and joins them into a cluster (3 masters, 3 replicas). */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<PrivateRedisCluster> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'herald-redis-cluster-'));
  let access: NodeAccess = { password: options.password };
  if (options.tls) {
    const { key, cert } = selfSignedCertificate();
    const [caFile, keyFile] = [path.join(dir, 'cert.pem'), path.join(dir, 'key.pem')];
    writeFileSync(caFile, cert);
    writeFileSync(keyFile, key);
    access = { ...access, tls: { ca: cert, caFile, certFile: caFile, keyFile } };
  }
  const nodes: ClusterNodeProcess[] = [];
  const remove = async (): Promise<void> => {
    await Promise.all(nodes.map((node) => killProcess(node.child)));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const ports: number[] = [];
    // Distinct ports (closedPort may answer the same free port twice in a row once it is closed again).
    while (ports.length < MASTERS * 4) {
      const port = await closedPort();
      if (!ports.includes(port)) ports.push(port);
    }
    nodes.push(...(await Promise.all(Array.from({ length: MASTERS * 2 }, (_, i) => startNode(dir, access, ports[2 * i]!, ports[2 * i + 1]!)))));
    const addresses = nodes.map((node) => `127.0.0.1:${node.port}`);
    const cliAccess = [
      ...(access.tls ? ['--tls', '--cacert', access.tls.caFile] : []),
      ...(access.password ? ['--no-auth-warning', '-a', access.password] : []),
    ];
    await promisify(execFile)('redis-cli', [...cliAccess, '--cluster', 'create', ...addresses, '--cluster-replicas', '1', '--cluster-yes'], {
      timeout: 30_000,
    });
    await waitUntil(() => everyNodeSeesOk(access, nodes), 20_000, 'the new cluster to be ok on every node');
    // A replica can only be promoted once it has synchronised with its master.
    await waitUntil(() => everyReplicaInSync(access, nodes), 20_000, 'every replica to be in sync with its master');
  } catch (error) {
    await remove();
    throw error;
  }

  return {
    url: `${access.tls ? 'rediss' : 'redis'}+cluster://${access.password ? `:${encodeURIComponent(access.password)}@` : ''}${nodes.map((node) => `127.0.0.1:${node.port}`).join(',')}`,
    caFile: access.tls?.caFile,
    nodes,
    shardOf: (key) => shardOf(access, nodes, key),
    async failover(shard) {
      await withNode(access, shard.replica, (redis) => redis.call('CLUSTER', 'FAILOVER'));
      await waitUntil(
        async () => (await role(access, shard.replica)) === 'master' && (await role(access, shard.master)) === 'slave',
        20_000,
        `node ${shard.replica} to take over from ${shard.master}`,
      );
      await waitUntil(() => everyNodeSeesOk(access, nodes), 20_000, 'the cluster to be ok after the failover');
    },
    async killMaster(shard) {
      await killProcess(nodes.find((node) => node.port === shard.master)!.child);
      const alive = nodes.filter((node) => node.port !== shard.master);
      await waitUntil(async () => (await role(access, shard.replica)) === 'master', 30_000, `node ${shard.replica} to be elected in place of ${shard.master}`);
      await waitUntil(() => everyNodeSeesOk(access, alive), 20_000, 'the cluster to be ok after the election');
    },
    remove,
  };
}

async function startNode(dir: string, access: NodeAccess, port: number, busPort: number): Promise<ClusterNodeProcess> {
  const listen = access.tls
    ? [
        '--port',
        '0',
        '--tls-port',
        String(port),
        '--tls-cluster',
        'yes',
        '--tls-replication',
        'yes',
        '--tls-auth-clients',
        'no',
        '--tls-cert-file',
        access.tls.certFile,
        '--tls-key-file',
        access.tls.keyFile,
        '--tls-ca-cert-file',
        access.tls.caFile,
      ]
    : ['--port', String(port)];
  const auth = access.password ? ['--requirepass', access.password, '--masterauth', access.password] : [];
  const args = [
    ...listen,
    ...auth,
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--daemonize',
    'no',
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    `nodes-${port}.conf`,
    // A bus port of its own: port + 10000, the default, may be over 65535 or taken.
    '--cluster-port',
    String(busPort),
    '--cluster-node-timeout',
    String(NODE_TIMEOUT_MS),
    // A replica may take over however long ago it last heard from its master (a test's clock is short).
    '--cluster-replica-validity-factor',
    '0',
    '--save',
    '',
    '--appendonly',
    'no',
  ];
  const child = await spawnRedisServer(port, args);
  return { port, child };
}

/** Runs `work` on a plain connection to one node (cluster administration, not Herald's traffic). */
async function withNode<T>(access: NodeAccess, port: number, work: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    password: access.password,
    ...(access.tls ? { tls: { ca: access.tls.ca } } : {}),
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await work(redis);
  } finally {
    redis.disconnect();
  }
}

async function role(access: NodeAccess, port: number): Promise<string> {
  return withNode(access, port, async (redis) => String(((await redis.call('ROLE')) as unknown[])[0]));
}

async function everyNodeSeesOk(access: NodeAccess, nodes: readonly ClusterNodeProcess[]): Promise<boolean> {
  const states = await Promise.all(nodes.map((node) => withNode(access, node.port, (redis) => redis.call('CLUSTER', 'INFO')).catch(() => '')));
  return states.every((info) => String(info).includes('cluster_state:ok'));
}

async function everyReplicaInSync(access: NodeAccess, nodes: readonly ClusterNodeProcess[]): Promise<boolean> {
  const infos = await Promise.all(nodes.map((node) => withNode(access, node.port, (redis) => redis.info('replication'))));
  const replicas = infos.filter((info) => info.includes('role:slave'));
  return replicas.length === MASTERS && replicas.every((info) => info.includes('master_link_status:up'));
}

async function shardOf(access: NodeAccess, nodes: readonly ClusterNodeProcess[], key: string): Promise<Shard> {
  return withNode(access, nodes[0]!.port, async (redis) => {
    const slot = Number(await redis.call('CLUSTER', 'KEYSLOT', key));
    // CLUSTER NODES: `<id> <ip:port@bus> <flags> <master id or -> … <slot ranges>`, one node a line.
    const lines = String(await redis.call('CLUSTER', 'NODES'))
      .trim()
      .split('\n')
      .map((line) => line.split(' '));
    const master = lines.find((fields) => fields[2]!.includes('master') && fields.slice(8).some((range) => inRange(slot, range)));
    const replica = lines.find((fields) => fields[3] === master?.[0] && !fields[2]!.includes('fail'));
    // After a master was killed, its shard has no replica left: answered as 0.
    if (!master) throw new Error(`no master serves slot ${slot}`);
    const port = (fields: string[]): number => Number(fields[1]!.split('@')[0]!.split(':')[1]);
    return { master: port(master), replica: replica ? port(replica) : 0 };
  });
}

function inRange(slot: number, range: string): boolean {
  const [from, to = from] = range.split('-').map(Number) as [number, number?];
  return slot >= from && slot <= to;
}

/** Waits for `check` to hold; a check that throws (a node not answering yet) counts as not yet. */
async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  await waitFor(
    () => check().catch(() => false),
    (ok) => ok,
    timeoutMs,
    what,
  );
}
