import { HttpError } from './http-error';

/**
 * Runs `work` once `key` has a free turn; throws a 429 HttpError (with Retry-After) when none
 * frees up in time.
 */
export type KeyConcurrency = <T>(key: string, work: () => Promise<T>) => Promise<T>;

export interface KeyConcurrencyOptions {
  /** Most calls of one key running at once. */
  perKey: number;
  /** How long a call over that waits for a turn (first come, first served); 0 refuses at once. */
  queueWaitMs: number;
}

/** A key's calls: how many run, and the turns of those waiting, oldest first. */
interface Lane {
  running: number;
  waiting: Array<() => void>;
}

/**
 * A per-key limit of concurrent calls, in this process's memory. A rate limit bounds how many
 * requests a key sends; this bounds how many of its expensive ones hold database connections at
 * once, so that one key's slow queries never take every connection of the pool they share with
 * other keys. Per process, like the pool it protects.
 */
export function createKeyConcurrency(options: KeyConcurrencyOptions): KeyConcurrency {
  const lanes = new Map<string, Lane>();

  const refused = (): HttpError =>
    new HttpError(
      429,
      'too_many_concurrent_requests',
      'Too Many Requests',
      `At most ${options.perKey} GET /events of one API key filtering on eventType or objectId run at once, and none finished within ${options.queueWaitMs} ms. ` +
        'Send fewer of them at once, or narrow them with createdFrom and createdTo so that they finish sooner.',
      {},
      { 'Retry-After': '1' },
    );

  const acquire = async (key: string): Promise<void> => {
    let lane = lanes.get(key);
    if (!lane) {
      lane = { running: 0, waiting: [] };
      lanes.set(key, lane);
    }
    if (lane.running < options.perKey) {
      lane.running += 1;
      return;
    }
    if (options.queueWaitMs === 0) throw refused();
    const waiting = lane.waiting;
    await new Promise<void>((resolve, reject) => {
      const turn = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        waiting.splice(waiting.indexOf(turn), 1);
        reject(refused());
      }, options.queueWaitMs);
      waiting.push(turn);
    });
  };

  const release = (key: string): void => {
    const lane = lanes.get(key)!;
    const next = lane.waiting.shift();
    // The turn passes straight to the oldest waiter: its running slot is this one.
    if (next) next();
    else if (--lane.running === 0) lanes.delete(key);
  };

  return async (key, work) => {
    await acquire(key);
    try {
      return await work();
    } finally {
      release(key);
    }
  };
}
