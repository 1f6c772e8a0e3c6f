import { HttpError } from './http-error';

/**
 * Runs `work` once `key` has a free turn and the process has one too; throws a 429 HttpError
 * (with Retry-After) when none frees up in time.
 */
export type KeyConcurrency = <T>(key: string, work: () => Promise<T>) => Promise<T>;

export interface KeyConcurrencyOptions {
  /** Most calls of one key running at once. */
  perKey: number;
  /** Most calls of all keys together running at once. */
  total: number;
  /** How long a call waits for its turns (first come, first served); 0 refuses at once. */
  queueWaitMs: number;
}

/** Calls sharing one limit: how many run, and the turns of those waiting, oldest first. */
interface Lane {
  running: number;
  waiting: Array<() => void>;
}

/**
 * A limit of concurrent calls per key and for the whole process, in this process's memory. A rate
 * limit bounds how many requests a key sends; this bounds how many expensive ones hold database
 * connections and PostgreSQL's CPU at once. Per key, so one key's slow queries never take every
 * turn; in total, so that all keys' expensive reads together leave CPU to everyone's cheap reads
 * (each runs on one core: the merchant-reads pool has no parallel workers). Per process, like the
 * pool it protects. A call first waits for its key's turn, then for the process's, within one wait.
 */
export function createKeyConcurrency(options: KeyConcurrencyOptions): KeyConcurrency {
  const lanes = new Map<string, Lane>();
  const everyKey: Lane = { running: 0, waiting: [] };

  const refused = (which: 'key' | 'total'): HttpError =>
    new HttpError(
      429,
      'too_many_concurrent_requests',
      'Too Many Requests',
      (which === 'key'
        ? `At most ${options.perKey} GET /events of one API key filtering on eventType or objectId run at once, and none finished within ${options.queueWaitMs} ms. `
        : `At most ${options.total} GET /events filtering on eventType or objectId run at once on this server, and none finished within ${options.queueWaitMs} ms. `) +
        'Send fewer of them at once, or narrow them with createdFrom and createdTo so that they finish sooner.',
      {},
      { 'Retry-After': '1' },
    );

  /** Takes a turn of `lane` (at most `limit` at once), waiting until `deadline` at the latest. */
  const take = async (lane: Lane, limit: number, deadline: number, which: 'key' | 'total'): Promise<void> => {
    if (lane.running < limit) {
      lane.running += 1;
      return;
    }
    const waitMs = deadline - Date.now();
    if (options.queueWaitMs === 0 || waitMs <= 0) throw refused(which);
    const waiting = lane.waiting;
    await new Promise<void>((resolve, reject) => {
      const turn = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        waiting.splice(waiting.indexOf(turn), 1);
        reject(refused(which));
      }, waitMs);
      waiting.push(turn);
    });
  };

  /** Gives the turn straight to the oldest waiter (its running slot is this one), or frees it. */
  const give = (lane: Lane): void => {
    const next = lane.waiting.shift();
    if (next) next();
    else lane.running -= 1;
  };

  const releaseKey = (key: string): void => {
    const lane = lanes.get(key)!;
    give(lane);
    if (lane.running === 0) lanes.delete(key);
  };

  return async (key, work) => {
    const deadline = Date.now() + options.queueWaitMs;
    let lane = lanes.get(key);
    if (!lane) {
      lane = { running: 0, waiting: [] };
      lanes.set(key, lane);
    }
    await take(lane, options.perKey, deadline, 'key');
    try {
      await take(everyKey, options.total, deadline, 'total');
    } catch (error) {
      releaseKey(key);
      throw error;
    }
    try {
      return await work();
    } finally {
      give(everyKey);
      releaseKey(key);
    }
  };
}
