// The queue package on a real Redis Cluster (three masters with a replica each, started by the
// test): the client createRedisConnection builds for a redis+cluster:// URL, and every script and
// multi-key command Herald runs itself (target gate, health reads, fair share) on keys under the
// hash-tagged prefix, with batches that span several targets. Without the hash tag the cluster
// refuses them, which is why Herald adds it.
import { randomBytes, randomUUID } from 'node:crypto';
import { Worker } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { parseRedisUrl, redisKeyPrefix } from '@herald/config';
import type { DeliveryRef } from '@herald/domain';
import { deliveryRefs } from './support/delivery-refs';
import { removeQueueKeys, startRedisCluster, type PrivateRedisCluster } from '@herald/testing';
import {
  countBreakers,
  createDeliveryProducer,
  createRedisConnection,
  createTargetGate,
  DELIVERIES_QUEUE,
  pingRedis,
  readTargetHealth,
  scanKeys,
  type RedisConnection,
  type TargetGateSettings,
} from '../src';

const SETTINGS: TargetGateSettings = {
  maxInFlight: 1,
  leaseMs: 60_000,
  breaker: { failures: 2, ratio: 0, windowMs: 300_000, minRequests: 10, openMs: 30_000, openMaxMs: 100_000 },
};
const RETRY = { attempts: 1, keepCompletedSeconds: 60, keepFailedSeconds: 60, keepCompletedMax: 1_000, keepFailedMax: 1_000 };

let cluster: PrivateRedisCluster;
let client: RedisConnection;
let prefix: string;

beforeAll(async () => {
  cluster = await startRedisCluster();
  client = createRedisConnection(cluster.url, { role: 'client' });
  await pingRedis(client);
}, 60_000);
afterAll(async () => {
  client?.disconnect();
  await cluster?.remove();
});
beforeEach(() => {
  prefix = redisKeyPrefix(`test_${randomBytes(6).toString('hex')}`, parseRedisUrl(cluster.url));
});

/** Every key under the prefix, from every master. */
async function keysUnder(keyPrefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const page of scanKeys(client, `${keyPrefix}:*`)) keys.push(...page.keys);
  return keys;
}

describe('createRedisConnection', () => {
  it('builds a cluster client for redis+cluster:// and a one-server client for redis://', () => {
    expect(client).toBeInstanceOf(Cluster);
    const single = createRedisConnection('redis://127.0.0.1:6379', { role: 'client' });
    try {
      expect(single).toBeInstanceOf(Redis);
      expect(single).not.toBeInstanceOf(Cluster);
    } finally {
      single.disconnect();
    }
  });

  it('gives every node of a rediss+cluster:// URL its credentials and TLS, with the names the cluster announces', () => {
    const tls = createRedisConnection('rediss+cluster://herald:s%40cret@127.0.0.1:1', { role: 'client', name: 'herald:test' });
    tls.on('error', () => undefined);
    try {
      expect(tls).toBeInstanceOf(Cluster);
      const { options } = tls as Cluster;
      expect(options.redisOptions).toMatchObject({ username: 'herald', password: 's@cret', tls: {}, connectionName: 'herald:test', maxRetriesPerRequest: 1 });
      expect(options.enableOfflineQueue).toBe(false);
      // No DNS resolution of the announced names, so a certificate issued for them matches.
      const looked: string[] = [];
      options.dnsLookup!('node-1.cache.example', (_error, address) => looked.push(address));
      expect(looked).toEqual(['node-1.cache.example']);
    } finally {
      tls.disconnect();
    }
  });

  it('lets a worker connection on a cluster wait for Redis instead of failing (BullMQ requires it)', () => {
    const worker = createRedisConnection(cluster.url, { role: 'worker' }) as Cluster;
    try {
      expect(worker.options.enableOfflineQueue).toBe(true);
      expect(worker.options.redisOptions?.maxRetriesPerRequest).toBeNull();
    } finally {
      worker.disconnect();
    }
  });
});

describe('Herald on a Redis Cluster', () => {
  it('runs the target gate over batches spanning several targets, and reads their health', async () => {
    expect(prefix).toMatch(/^\{test_[0-9a-f]{12}\}$/);
    let clock = 1_800_000_000_000;
    const gate = createTargetGate(client, { queuePrefix: prefix, settings: SETTINGS, now: () => clock, random: () => 0.5 });
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];

    const admitted = await gate.admit([
      { targetId: a, jobId: 'a1' },
      { targetId: b, jobId: 'b1' },
      { targetId: c, jobId: 'c1' },
      { targetId: a, jobId: 'a2' },
    ]);
    expect(admitted.map((x) => (x.admitted ? 'in' : x.reason))).toEqual(['in', 'in', 'in', 'target_busy']);

    // Two failures of b in a row open its breaker; a's success frees its slot for a2.
    expect(
      await gate.release([
        { targetId: a, jobId: 'a1', verdict: 'success', durationMs: 100 },
        { targetId: b, jobId: 'b1', verdict: 'failure', durationMs: 100 },
        { targetId: c, jobId: 'c1', verdict: 'answer', durationMs: 100 },
      ]),
    ).toEqual([undefined, undefined, undefined]);
    clock += 1_000;
    expect(
      (
        await gate.admit([
          { targetId: a, jobId: 'a2' },
          { targetId: b, jobId: 'b2' },
        ])
      ).map((x) => x.admitted),
    ).toEqual([true, true]);
    expect(await gate.release([{ targetId: b, jobId: 'b2', verdict: 'failure', durationMs: 100 }])).toEqual(['opened']);

    expect(await readTargetHealth(client, prefix, a, clock)).toMatchObject({ inFlight: 1, deferred: 0, breaker: { state: 'closed' } });
    expect(await readTargetHealth(client, prefix, b, clock)).toMatchObject({ inFlight: 0, breaker: { state: 'open', consecutiveFailures: 0 } });
    expect(await countBreakers(client, prefix, clock)).toEqual({ open: 1, half_open: 0 });
    // Every key the gate wrote is under the hash tag.
    const keys = await keysUnder(prefix);
    expect(keys.length).toBeGreaterThan(5);
    expect(keys.every((key) => key.startsWith(`${prefix}:gate:`))).toBe(true);
  });

  it('is refused by the cluster when the prefix has no hash tag (keys of several slots in one script)', async () => {
    const untagged = `test_${randomBytes(6).toString('hex')}`;
    const gate = createTargetGate(client, { queuePrefix: untagged, settings: SETTINGS });
    const entries = Array.from({ length: 8 }, (_, i) => ({ targetId: randomUUID(), jobId: `j${i}` }));
    await expect(gate.admit(entries)).rejects.toThrow(/CROSSSLOT/);
  });

  it('enqueues with fair-share priorities and hands the jobs to a BullMQ worker', async () => {
    const workerConnection = createRedisConnection(cluster.url, { role: 'worker' });
    const producer = createDeliveryProducer(client, { prefix, retry: RETRY, timeoutMs: 5_000 });
    const worker = new Worker<DeliveryRef>(DELIVERIES_QUEUE, null, { connection: workerConnection, prefix, autorun: false });
    try {
      const burst = deliveryRefs(randomUUID(), 5);
      const [other] = deliveryRefs(randomUUID(), 1);
      await producer.enqueue(burst);
      await producer.enqueue([other!]);

      const token = randomUUID();
      const taken: string[] = [];
      for (let i = 0; i < 6; i++) {
        const job = await worker.getNextJob(token, { block: false });
        if (!job) break;
        taken.push(job.data.deliveryId);
        await job.moveToCompleted('done', token, false);
      }
      // The other target's one job comes among the first three, not behind the whole burst, which
      // keeps its order.
      expect(taken).toHaveLength(6);
      expect(taken.indexOf(other!.deliveryId)).toBeLessThan(3);
      expect(taken.filter((id) => id !== other!.deliveryId)).toEqual(burst.map((ref) => ref.deliveryId));
      expect((await keysUnder(prefix)).some((key) => key === `${prefix}:${DELIVERIES_QUEUE}:fair`)).toBe(true);
    } finally {
      await worker.close();
      await producer.close();
      workerConnection.disconnect();
    }
  });

  it("removes a prefix's keys from every master (the tests' cleanup)", async () => {
    const gate = createTargetGate(client, { queuePrefix: prefix, settings: SETTINGS });
    await gate.admit([{ targetId: randomUUID(), jobId: 'j1' }]);
    const other = redisKeyPrefix(`test_${randomBytes(6).toString('hex')}`, parseRedisUrl(cluster.url));
    await createTargetGate(client, { queuePrefix: other, settings: SETTINGS }).admit([{ targetId: randomUUID(), jobId: 'j1' }]);
    expect(await keysUnder(prefix)).not.toEqual([]);

    await removeQueueKeys(cluster.url, prefix);
    expect(await keysUnder(prefix)).toEqual([]);
    // Another prefix's keys stay.
    expect(await keysUnder(other)).not.toEqual([]);
  });
});
