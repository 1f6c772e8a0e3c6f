import { compareStrings, targetHealthAfter, type StoredTargetHealth } from '@herald/domain';
import type { DeliveryStatus } from '../generated/kysely/schema';
import type { DatabasePool } from '../pool';
import { inTransaction, run, type RowOf, type Sql } from '../sql';
import { EVERY_PARTITION, storedRange, type StoredRange } from '../stored-range';
import { targetHealthStatement, targetHealthWriteStatement, type TargetHealthInput } from './delivery-attempt-statements';

/** Every statement of the targets' health, built from its parameters (the SQL snapshot compiles each). */
export const targetHealthQueries = {
  /** The stored health of these deliveries' targets, read, or (`lock`) locked in target id order. */
  read: (deliveryIds: readonly string[], stored: StoredRange = EVERY_PARTITION, lock = false) =>
    targetHealthStatement(lock ? 'lock' : 'read', { ids: deliveryIds, ...stored }),

  /** Stores targets' health as targetHealthAfter decided it. */
  write: (targets: readonly TargetHealthInput[]) =>
    targetHealthWriteStatement('write', {
      id: targets.map((t) => t.id),
      last_success_at: targets.map((t) => t.last_success_at),
      failing_since: targets.map((t) => t.failing_since),
      enabled: targets.map((t) => t.enabled),
      disabled_reason: targets.map((t) => t.disabled_reason),
      disabled_at: targets.map((t) => t.disabled_at),
    }),
};

/** What the health of a target takes from a recorded attempt (an AttemptRecord of delivery-attempts.ts). */
export interface HealthOfAttempt {
  deliveryId: string;
  storedAt?: Date;
  attempt: { startedAt: Date };
  outcome: DeliveryStatus;
  disableTarget?: boolean;
}

type HealthRow = RowOf<ReturnType<typeof targetHealthQueries.read>>;

/** Each target's next health (targetHealthAfter) where it changes, with the attempts of it that switched it off. */
function decide(rows: readonly HealthRow[], records: readonly HealthOfAttempt[], now: Date): Array<{ write: TargetHealthInput; disablers: string[] }> {
  const targets = new Map<string, { stored: StoredTargetHealth; deliveries: Set<string> }>();
  for (const row of rows) {
    let target = targets.get(row.id);
    if (!target) {
      const stored = {
        enabled: row.enabled,
        failingSince: row.failing_since,
        lastSuccessAt: row.last_success_at,
        disabledReason: row.disabled_reason,
        disabledAt: row.disabled_at,
      };
      target = { stored, deliveries: new Set() };
      targets.set(row.id, target);
    }
    target.deliveries.add(row.delivery_id);
  }
  const decided: Array<{ write: TargetHealthInput; disablers: string[] }> = [];
  for (const [id, { stored, deliveries }] of targets) {
    const own = records.filter((r) => deliveries.has(r.deliveryId));
    const outcomes = own.map((r) => ({ succeeded: r.outcome === 'succeeded', startedAt: r.attempt.startedAt, disableTarget: r.disableTarget === true }));
    const after = targetHealthAfter(stored, outcomes, now);
    if (!after) continue;
    const { next } = after;
    decided.push({
      write: {
        id,
        last_success_at: next.lastSuccessAt,
        failing_since: next.failingSince,
        enabled: next.enabled,
        disabled_reason: next.disabledReason,
        disabled_at: next.disabledAt,
      },
      disablers: after.autoDisabled ? own.filter((r) => r.disableTarget === true).map((r) => r.deliveryId) : [],
    });
  }
  return decided;
}

/**
 * Stores the targets' health after a batch of attempts, as targetHealthAfter decides it; returns,
 * for each target this batch switched off, the one attempt that reports it (one warning). The
 * health is read first without a lock: in the steady state (what the worker saw at load is stale,
 * but the stored health already says what this batch would write) no target row is locked or
 * written, so workers recording batches of the same busy target never wait on each other here.
 * Only the targets whose health changes are then locked (in id order), read again and written.
 */
export async function recordTargetHealth(pool: DatabasePool, records: readonly HealthOfAttempt[]): Promise<Set<string>> {
  if (records.length === 0) return new Set();
  const stored = storedRange(records.map((r) => r.storedAt));
  const now = new Date();
  const seen = (
    await run(
      pool,
      targetHealthQueries.read(
        records.map((r) => r.deliveryId),
        stored,
      ),
      { prepared: 'read-target-health' },
    )
  ).rows;
  const changing = new Set(decide(seen, records, now).map((d) => d.write.id));
  if (changing.size === 0) return new Set();
  const targetOf = new Map(seen.map((row) => [row.delivery_id, row.id]));
  const ofChanging = records.filter((r) => changing.has(targetOf.get(r.deliveryId) ?? ''));
  return inTransaction(pool, async (tx: Sql) => {
    const locked = (
      await run(
        tx,
        targetHealthQueries.read(
          ofChanging.map((r) => r.deliveryId),
          stored,
          true,
        ),
        { prepared: 'lock-target-health' },
      )
    ).rows;
    const decided = decide(locked, ofChanging, now);
    if (decided.length > 0) await run(tx, targetHealthQueries.write(decided.map((d) => d.write)), { prepared: 'write-target-health' });
    return new Set(decided.flatMap((d) => d.disablers.sort(compareStrings).slice(0, 1)));
  });
}
