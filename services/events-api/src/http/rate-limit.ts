import type { Response } from 'express';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { RedisConnection } from '@herald/queue';
import { HttpError } from './http-error';

/** Counts one request of `key`; throws a 429 HttpError (with Retry-After) past the limit. */
export type RateLimit = (key: string, res: Response) => Promise<void>;

export interface RateLimitOptions {
  redis: RedisConnection;
  keyPrefix: string;
  requests: number;
  windowSeconds: number;
}

/**
 * A fixed-window limit per key, counted in Redis so that every events-api process shares it.
 * While Redis is down, each process falls back to counting in memory rather than refusing traffic.
 */
export function createRateLimit(options: RateLimitOptions): RateLimit {
  const limits = { points: options.requests, duration: options.windowSeconds };
  const limiter = new RateLimiterRedis({
    storeClient: options.redis,
    keyPrefix: `${options.keyPrefix}:ratelimit`,
    ...limits,
    insuranceLimiter: new RateLimiterMemory(limits),
  });
  return async (key, res) => {
    try {
      const state = await limiter.consume(key);
      setHeaders(res, options.requests, state);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      setHeaders(res, options.requests, rejection);
      const retryAfter = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      throw new HttpError(429, 'rate_limited', 'Too Many Requests', `At most ${options.requests} requests per ${options.windowSeconds} s per API key.`, {}, {
        'Retry-After': String(retryAfter),
      });
    }
  };
}

function setHeaders(res: Response, limit: number, state: RateLimiterRes): void {
  res.set({
    'RateLimit-Limit': String(limit),
    'RateLimit-Remaining': String(Math.max(0, state.remainingPoints)),
    'RateLimit-Reset': String(Math.ceil(state.msBeforeNext / 1000)),
  });
}
