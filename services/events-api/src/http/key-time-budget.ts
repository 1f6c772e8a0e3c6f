import { HttpError } from './http-error';

/**
 * The database time each key may spend on expensive reads: a bucket per key that fills at
 * `msPerSecond` up to `burstMs`, from which each read's own duration is taken once it ends.
 */
export interface KeyTimeBudget {
  /**
   * Resolves once `key` has budget left: at once, or after it refills if that takes at most
   * `waitMs`; otherwise rejects with a 429 HttpError (with Retry-After) after `waitMs`. Holding
   * the refusal, as a turn's queue does, keeps a client that retries at once from looping on it.
   */
  check(key: string): Promise<void>;
  /** Runs `work` and takes its duration from `key`'s budget (a read may overdraw it once: the next wait is longer). */
  spend<T>(key: string, work: () => Promise<T>): Promise<T>;
}

export interface KeyTimeBudgetOptions {
  /** Milliseconds of expensive reads one key may run per second, on average; 0 turns the budget off. */
  msPerSecond: number;
  /** Most milliseconds a key may save up (at least the longest statement, so any one read fits). */
  burstMs: number;
  /** How long a read over the budget waits for it before it is refused (EVENTS_QUEUE_WAIT_MS). */
  waitMs: number;
  /** The clock, in milliseconds (tests pass their own). Default `performance.now`. */
  now?: () => number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A bound on the time, not only the number, of one key's expensive reads. A turn limit of one read
 * at a time still lets a key keep one PostgreSQL core busy without pause; with this budget it keeps
 * it busy at most msPerSecond / 1000 of the time, and the other tenants' reads meet a free core
 * the rest of the time. Per process, in memory, like the turns; a key's entry is dropped once its
 * bucket is full again.
 */
export function createKeyTimeBudget(options: KeyTimeBudgetOptions): KeyTimeBudget {
  const now = options.now ?? (() => performance.now());
  const buckets = new Map<string, { balance: number; at: number }>();

  /** The key's balance now (full when it has no entry). */
  const balanceOf = (key: string, at: number): number => {
    const bucket = buckets.get(key);
    if (!bucket) return options.burstMs;
    const balance = Math.min(options.burstMs, bucket.balance + ((at - bucket.at) * options.msPerSecond) / 1000);
    if (balance >= options.burstMs) buckets.delete(key);
    return balance;
  };

  return {
    async check(key) {
      if (options.msPerSecond === 0) return;
      const balance = balanceOf(key, now());
      if (balance > 0) return;
      // Until the balance is above 0 again.
      const refillMs = (-balance * 1000) / options.msPerSecond + 1;
      if (refillMs <= options.waitMs) {
        await sleep(refillMs);
        return;
      }
      await sleep(options.waitMs);
      const waitSeconds = Math.max(1, Math.ceil((refillMs - options.waitMs) / 1000));
      throw new HttpError(
        429,
        'query_time_exceeded',
        'Too Many Requests',
        `GET /events filtering on eventType or objectId of one API key may run ${options.msPerSecond} ms per second on average, and this key's have used that up. ` +
          'Wait, or narrow them with createdFrom and createdTo so that each costs less.',
        {},
        { 'Retry-After': String(waitSeconds) },
      );
    },
    async spend(key, work) {
      if (options.msPerSecond === 0) return work();
      const started = now();
      try {
        return await work();
      } finally {
        const ended = now();
        buckets.set(key, { balance: balanceOf(key, ended) - (ended - started), at: ended });
      }
    },
  };
}
