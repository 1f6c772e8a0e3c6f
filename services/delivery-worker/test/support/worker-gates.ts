// Worker gates (worker.ts batchedTargetGate) on the real Redis for one test at a time: a queue
// prefix of its own, the delivery worker's kind of connection, and every gate closed and every key
// of the prefix removed after the test.
import { loadWorkerConfig } from '@herald/config';
import { createLogger } from '@herald/logging';
import { createRedisConnection, pingRedis, type RedisConnection } from '@herald/queue';
import { uniqueId } from '@herald/testing';
import { batchedTargetGate, type WorkerGate } from '../../src/worker';

export interface WorkerGates {
  /** A worker's gate with these settings; each gate is another worker as far as its leases go. */
  gate(env?: Record<string, string>, options?: { leaseRenewMs?: number }): WorkerGate;
  /** The test's connection, the one its gates use. */
  readonly redis: RedisConnection;
  readonly queuePrefix: string;
}

/** Registers the hooks; the returned object's fields are the current test's. */
export function useWorkerGates(): WorkerGates {
  let redis: RedisConnection;
  let queuePrefix: string;
  let gates: WorkerGate[] = [];
  beforeEach(async () => {
    queuePrefix = uniqueId('test');
    // The delivery worker's kind of connection: commands wait for Redis instead of failing.
    redis = createRedisConnection('redis://127.0.0.1:6379', { role: 'worker' });
    await pingRedis(redis);
  });
  afterEach(async () => {
    await Promise.all(gates.map((g) => g.close()));
    gates = [];
    const keys = await redis.keys(`${queuePrefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });
  return {
    gate(env = {}, options = {}) {
      const config = loadWorkerConfig({
        DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/unused',
        REDIS_URL: 'redis://127.0.0.1:6379',
        QUEUE_PREFIX: queuePrefix,
        ...env,
      });
      const g = batchedTargetGate({ config, connection: redis, logger: createLogger({ level: 'error', service: 'test' }) }, options);
      gates.push(g);
      return g;
    },
    get redis() {
      return redis;
    },
    get queuePrefix() {
      return queuePrefix;
    },
  };
}
