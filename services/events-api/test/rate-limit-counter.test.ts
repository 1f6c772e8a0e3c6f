import { createRedisConnection, type RedisConnection } from '@herald/queue';
import { removeQueueKeys, uniqueId, waitFor } from '@herald/testing';
import { createRateLimitCounter, type RateLimitCounterOptions } from '../src/http/rate-limit-counter';

const REDIS_URL = 'redis://127.0.0.1:6379';
const WINDOW_MS = 60_000;
// A fixed clock in the middle of a window, so no window ends during a test.
const T0 = 1_000 * WINDOW_MS + WINDOW_MS / 2;

describe('the rate limit counter', () => {
  let redis: RedisConnection;
  let prefix: string;
  let clock: number;
  const counter = (overrides: Partial<RateLimitCounterOptions> = {}) =>
    createRateLimitCounter({ redis, keyPrefix: prefix, requests: 10, windowMs: WINDOW_MS, syncMs: 60_000, now: () => clock, ...overrides });
  const admitted = (limiter: ReturnType<typeof counter>, key: string, n: number): number =>
    Array.from({ length: n }, () => limiter.consume(key).allowed).filter(Boolean).length;

  beforeEach(async () => {
    redis = createRedisConnection(REDIS_URL, { role: 'client', name: 'test-rate-limit' });
    // A client connection queues nothing while it connects.
    await new Promise((resolve) => redis.once('ready', resolve));
    prefix = uniqueId('ratelimit');
    clock = T0;
  });
  afterEach(async () => {
    redis.disconnect();
    await removeQueueKeys(REDIS_URL, prefix);
  });

  it('admits up to the limit in one process without waiting on Redis, then refuses until the window ends', async () => {
    const limiter = counter();
    expect(admitted(limiter, 'k', 10)).toBe(10);
    const refused = limiter.consume('k');
    expect(refused).toEqual({ allowed: false, remaining: 0, msBeforeReset: WINDOW_MS / 2 });
    expect(limiter.consume('other').allowed).toBe(true);
    clock = T0 + WINDOW_MS;
    expect(limiter.consume('k')).toMatchObject({ allowed: true, remaining: 9 });
  });

  it('shares one limit between two processes once they have synchronised through Redis', async () => {
    const a = counter();
    const b = counter();
    expect(admitted(a, 'k', 6)).toBe(6);
    expect(admitted(b, 'k', 3)).toBe(3);
    await a.sync();
    await b.sync();
    // b now knows a's 6: one request is left to the two of them.
    expect(b.consume('k')).toMatchObject({ allowed: true, remaining: 0 });
    expect(b.consume('k').allowed).toBe(false);
    await b.sync();
    // The tolerance: a learns b's counts at its next sync, so it admits one more before it.
    expect(a.consume('k').allowed).toBe(true);
    await a.sync();
    expect(a.consume('k').allowed).toBe(false);
    // The count lives in Redis only for its window (and one more, for clocks a little apart).
    const keys = await redis.keys(`${prefix}:ratelimit:k:*`);
    expect(keys).toHaveLength(1);
    expect(await redis.get(keys[0]!)).toBe('11');
    expect(await redis.pttl(keys[0]!)).toBeGreaterThan(WINDOW_MS);
  });

  it('synchronises on its own every syncMs while counts wait', async () => {
    const a = counter({ syncMs: 20 });
    const b = counter({ syncMs: 20 });
    // The shared count in Redis: what a sync sends (b reads the total back in the same round trip).
    const shared = async (): Promise<string | null> => {
      const [key] = await redis.keys(`${prefix}:ratelimit:k:*`);
      return key === undefined ? null : redis.get(key);
    };
    expect(admitted(a, 'k', 10)).toBe(10);
    await waitFor(shared, (count) => count === '10', 2_000, "a's own sync");
    b.consume('k');
    await waitFor(shared, (count) => count === '11', 2_000, "b's own sync");
    expect(b.consume('k').allowed).toBe(false);
  });

  it('keeps counting in memory while Redis is unreachable', async () => {
    const down = createRedisConnection('redis://127.0.0.1:1', { role: 'client', name: 'test-rate-limit-down' });
    down.on('error', () => undefined);
    try {
      const cut = counter({ redis: down });
      expect(admitted(cut, 'k', 12)).toBe(10);
      await expect(cut.sync()).resolves.toBeUndefined();
      expect(cut.consume('k').allowed).toBe(false);
    } finally {
      down.disconnect();
    }
  });
});
