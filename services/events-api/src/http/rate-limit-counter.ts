import type { RedisConnection } from '@herald/queue';

/** What counting one request decided. */
export interface RateLimitDecision {
  allowed: boolean;
  /** Requests the key has left in this window, as this process knows. */
  remaining: number;
  /** Time until the window ends and the key's count starts again. */
  msBeforeReset: number;
}

export interface RateLimitCounterOptions {
  /** Shared by every events-api process; holds the keys' counts between synchronisations. */
  redis: RedisConnection;
  /** Prefix of the Redis keys (QUEUE_PREFIX, whose hash tag keeps them in one cluster slot). */
  keyPrefix: string;
  /** Requests allowed per key in each window. */
  requests: number;
  windowMs: number;
  /** How long local counts wait before they are added to Redis and the shared totals read back. */
  syncMs: number;
  /** The clock (tests fix it). Default Date.now. */
  now?: () => number;
}

export interface RateLimitCounter {
  /** Counts one request of `key` if the limit allows it. Synchronous: no request waits on Redis. */
  consume(key: string): RateLimitDecision;
  /** Adds the counts not yet shared to Redis and reads back every process's totals (also run every syncMs while counts wait). */
  sync(): Promise<void>;
}

/** One key's count in the current window: what Redis held at the last synchronisation, and what this process added since. */
interface KeyCount {
  window: number;
  shared: number;
  pending: number;
}

/**
 * A fixed-window limit per key, counted in this process's memory and synchronised with Redis in
 * batches, so that a request never waits on a Redis round trip while every events-api process
 * still shares one limit. Windows are aligned on the clock (window n covers [n, n+1) x windowMs),
 * so all processes agree on them without talking.
 *
 * Tolerance: between two synchronisations a process knows only its own new requests, so across
 * P processes a key may get up to what the others admitted in one syncMs beyond the limit, and
 * never more than P x the limit in a window (each process stops at the limit on its own counts).
 * While Redis is unreachable each process keeps counting in memory and retries the sync, rather
 * than refusing traffic.
 */
export function createRateLimitCounter(options: RateLimitCounterOptions): RateLimitCounter {
  const { redis, requests, windowMs, syncMs } = options;
  const now = options.now ?? Date.now;
  const counts = new Map<string, KeyCount>();
  let timer: NodeJS.Timeout | undefined;

  const redisKey = (key: string, window: number): string => `${options.keyPrefix}:ratelimit:${key}:${window}`;

  // A sync is scheduled only while counts wait for one: an idle process sends nothing to Redis.
  const scheduleSync = (): void => {
    if (timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      void sync();
    }, syncMs);
    timer.unref();
  };

  const sync = async (): Promise<void> => {
    const current = Math.floor(now() / windowMs);
    const sending: Array<{ key: string; count: KeyCount; sent: number }> = [];
    for (const [key, count] of counts) {
      if (count.window < current) counts.delete(key);
      else if (count.pending > 0) {
        sending.push({ key, count, sent: count.pending });
        count.pending = 0;
      }
    }
    if (sending.length === 0) return;
    const pipeline = redis.pipeline();
    for (const { key, count, sent } of sending) {
      pipeline.incrby(redisKey(key, count.window), sent);
      // Kept a window longer than it lasts: a process whose clock runs a little behind still finds it.
      pipeline.pexpire(redisKey(key, count.window), 2 * windowMs);
    }
    let replies: Array<[Error | null, unknown]> | null = null;
    try {
      replies = await pipeline.exec();
    } catch {
      replies = null;
    }
    sending.forEach(({ count, sent }, i) => {
      const [error, total] = replies?.[2 * i] ?? [new Error('no reply'), null];
      // Unsent counts stay this process's own until a later sync reaches Redis.
      if (error || typeof total !== 'number') count.pending += sent;
      else count.shared = Math.max(count.shared, total);
    });
    if (sending.some(({ count }) => count.pending > 0)) scheduleSync();
  };

  const consume = (key: string): RateLimitDecision => {
    const at = now();
    const window = Math.floor(at / windowMs);
    let count = counts.get(key);
    if (!count || count.window !== window) {
      count = { window, shared: 0, pending: 0 };
      counts.set(key, count);
    }
    const used = count.shared + count.pending;
    const msBeforeReset = (window + 1) * windowMs - at;
    if (used >= requests) return { allowed: false, remaining: 0, msBeforeReset };
    count.pending += 1;
    scheduleSync();
    return { allowed: true, remaining: requests - used - 1, msBeforeReset };
  };

  return { consume, sync };
}
