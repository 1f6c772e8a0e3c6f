import type { Response } from 'express';
import type { RedisConnection } from '@herald/queue';
import { HttpError } from './http-error';
import { createRateLimitCounter, type RateLimitDecision } from './rate-limit-counter';

/** Counts one request of `key`; throws a 429 HttpError (with Retry-After) past the limit. Never waits. */
export type RateLimit = (key: string, res: Response) => void;

export interface RateLimitOptions {
  redis: RedisConnection;
  keyPrefix: string;
  requests: number;
  windowSeconds: number;
  /** RATE_LIMIT_SYNC_MS: how often the process's counts are shared through Redis. */
  syncMs: number;
}

/**
 * The per-key limit of GET /events: counted in memory and shared by every events-api process
 * through Redis in batches (see createRateLimitCounter for the tolerance).
 */
export function createRateLimit(options: RateLimitOptions): RateLimit {
  const counter = createRateLimitCounter({
    redis: options.redis,
    keyPrefix: options.keyPrefix,
    requests: options.requests,
    windowMs: options.windowSeconds * 1000,
    syncMs: options.syncMs,
  });
  return (key, res) => {
    const decision = counter.consume(key);
    setHeaders(res, options.requests, decision);
    if (decision.allowed) return;
    throw new HttpError(
      429,
      'rate_limited',
      'Too Many Requests',
      `At most ${options.requests} requests per ${options.windowSeconds} s per API key.`,
      {},
      {
        'Retry-After': String(Math.max(1, Math.ceil(decision.msBeforeReset / 1000))),
      },
    );
  };
}

function setHeaders(res: Response, limit: number, decision: RateLimitDecision): void {
  res.setHeader('RateLimit-Limit', String(limit));
  res.setHeader('RateLimit-Remaining', String(decision.remaining));
  res.setHeader('RateLimit-Reset', String(Math.ceil(decision.msBeforeReset / 1000)));
}
