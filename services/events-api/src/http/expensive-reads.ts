import type { KeyConcurrency } from './key-concurrency';
import type { KeyTimeBudget } from './key-time-budget';

/**
 * The bounds on one key's reads whose cost grows with its data, shared by every route of the
 * merchant API, so that a key cannot double its share by spreading its reads over two routes.
 */
export interface ExpensiveReads {
  /** How many of one key's expensive reads query the database at once (EVENTS_CONCURRENCY_PER_KEY). */
  concurrency: KeyConcurrency;
  /** How much database time one key's expensive reads may take per second (EVENTS_EXPENSIVE_MS_PER_SECOND). */
  timeBudget: KeyTimeBudget;
}

/**
 * Runs `read` in one of the key's turns, its duration taken from the key's time budget. The budget
 * is checked before the turn is taken, so that a key over its budget holds no turn while it waits.
 */
export async function expensiveRead<T>(limits: ExpensiveReads, keyId: string, read: () => Promise<T>): Promise<T> {
  await limits.timeBudget.check(keyId);
  return limits.concurrency(keyId, () => limits.timeBudget.spend(keyId, read));
}
