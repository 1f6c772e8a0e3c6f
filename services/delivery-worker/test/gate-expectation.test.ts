// The worker's gate on the real Redis: which targets it expects to let in, so that the processor
// loads their deliveries while the gate decides (processor.ts), and which it does not.
import { randomUUID } from 'node:crypto';
import { loadWorkerConfig } from '@herald/config';
import { createLogger } from '@herald/logging';
import { createRedisConnection, pingRedis, type RedisConnection } from '@herald/queue';
import { uniqueId } from '@herald/testing';
import { batchedTargetGate, type WorkerGate } from '../src/worker';

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

function gate(env: Record<string, string>) {
  const config = loadWorkerConfig({ DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/unused', REDIS_URL: 'redis://127.0.0.1:6379', QUEUE_PREFIX: queuePrefix, ...env });
  const g = batchedTargetGate({ config, connection: redis, logger: createLogger({ level: 'error', service: 'test' }) });
  gates.push(g);
  return g;
}

describe('the worker’s expectation of the gate', () => {
  it('expects to let a target in until the gate turns one of its jobs away, and only for that target', async () => {
    const g = gate({ TARGET_MAX_IN_FLIGHT: '1' });
    const [busy, quiet] = [randomUUID(), randomUUID()];
    expect(g.expectsAdmission(busy)).toBe(true);
    expect(await g.admit(busy, 'j1')).toMatchObject({ admitted: true });
    expect(g.expectsAdmission(busy)).toBe(true);
    expect(await g.admit(busy, 'j2')).toMatchObject({ admitted: false, reason: 'target_busy' });
    expect(g.expectsAdmission(busy)).toBe(false);
    expect(g.expectsAdmission(quiet)).toBe(true);
  });

  it('expects to let the target in again a second after (the busy delay being shorter)', async () => {
    const g = gate({ TARGET_MAX_IN_FLIGHT: '1' });
    const target = randomUUID();
    await g.admit(target, 'j1');
    const turned = await g.admit(target, 'j2');
    expect(turned).toMatchObject({ admitted: false, reason: 'target_busy' });
    // The premise: a new target's busy delay is well under the second the worker remembers it for.
    expect(turned.admitted === false && turned.delayMs).toBeLessThan(1_000);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(g.expectsAdmission(target)).toBe(true);
  });

  it('does not expect to let a target in while its breaker is open or half-open', async () => {
    const g = gate({ TARGET_BREAKER_FAILURES: '1', TARGET_BREAKER_OPEN_SECONDS: '1' });
    const target = randomUUID();
    await g.admit(target, 'j1');
    await g.release(target, 'j1', 'failure', 10);
    expect(await g.admit(target, 'j2')).toMatchObject({ admitted: false, reason: 'breaker_open' });
    expect(g.expectsAdmission(target)).toBe(false);
  });
});
