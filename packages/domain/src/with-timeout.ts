import { TimeoutError } from './errors/timeout-error';

/**
 * Rejects with a `TimeoutError` carrying `message` when `promise` has not settled within `ms`.
 * The work itself is not cancelled (a promise cannot be); the caller only stops waiting for it.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
