// Worker gates (worker-gate.ts createWorkerGate) on the real Redis for one test at a time: a queue
// prefix of its own, the delivery worker's kind of connection, and every gate closed and every key
// of the prefix removed after the test.
import { loadWorkerConfig } from '@herald/config';
import { uniqueId } from '@herald/testing';
import { createRedisConnection, createWorkerGate, pingRedis, type RedisConnection, type WorkerGate, type WorkerGateOptions } from '../../src';

/**
 * How long a job let in one by one holds its slot at most: the delivery worker's with its default
 * timeouts (two 10 s POSTs and a 10 s token request, and a 30 s margin), longer than any test.
 */
const LEASE_MS = 60_000;

/** Logs nothing: the tests look at the gate's answers and at Redis. */
const SILENT = { info() {}, warn() {} };

export interface WorkerGates {
  /**
   * A worker's gate with the limit and the breaker the delivery worker's config reads from `env`
   * (TARGET_MAX_IN_FLIGHT, TARGET_BREAKER_*) and these options of the gate's own; each gate is
   * another worker as far as its leases go.
   */
  gate(env?: Record<string, string>, options?: Pick<WorkerGateOptions, 'leaseRenewMs'>): WorkerGate;
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
      const { targetGate } = loadWorkerConfig({
        DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/unused',
        REDIS_URL: 'redis://127.0.0.1:6379',
        QUEUE_PREFIX: queuePrefix,
        ...env,
      });
      const g = createWorkerGate(redis, { queuePrefix, settings: { ...targetGate, leaseMs: LEASE_MS }, logger: SILENT, ...options });
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
