import { compareStrings, type DeferralReason, isUuid } from '@herald/domain';
import type { DatabasePool } from '../pool';
import type { CredentialsCipher } from '../credentials-cipher';
import type { DeliveryStatus } from '../generated/kysely/schema';
import { run } from '../sql';
import { EVERY_PARTITION, storedRange, type StoredRange } from '../stored-range';
import { deferralStatement, loadStatement, recordStatement, type AttemptInput } from './delivery-attempt-statements';
import { recordTargetHealth } from './recorded-target-health';
import { loadedTarget, rememberingDecryptions, type LoadedTarget } from './loaded-target';

/**
 * The delivery worker's reads and writes, on its pg pool (never a Prisma model query, whose
 * query compiler would cost the worker about 75 MB): one
 * statement reads what a batch of attempts needs (delivery, target, event), one statement records
 * a batch of attempts (delivery_attempts rows and the deliveries' new state). The worker gathers
 * the jobs it runs at once into these batches (measured: four Prisma statements per callback cost
 * more CPU than the callback itself, in the worker and in PostgreSQL).
 */

/** What the worker reads of a delivery before it tries it. */
export interface DeliveryToAttempt {
  id: string;
  eventId: string;
  targetId: string;
  status: DeliveryStatus;
  /** Attempts recorded so far, replays included. */
  attemptsMade: number;
  /** When the ingest stored it (created_at, its partition key), which the record of its attempt passes on. */
  storedAt: Date;
}

/** Everything one attempt needs, read in one statement. */
export interface DeliveryWork {
  delivery: DeliveryToAttempt;
  target: LoadedTarget;
  /** The event's JSON exactly as GET /events returns it (eventJson); null when the row is gone. */
  eventJson: string | null;
  /**
   * A target with ordering `object`: the nearest earlier delivery of the same object to the same
   * target still pending when loaded, which this one waits for; null when there is none (or the
   * target delivers in any order). A hint: objectOrderRepository decides under a lock.
   */
  predecessorId: string | null;
}

/** One try of a delivery, as the worker measured it. Text is stored as given: keep secrets out of it. */
export interface NewDeliveryAttempt {
  startedAt: Date;
  durationMs: number;
  /** The merchant's HTTP status, when it answered. */
  statusCode?: number;
  /** Why the try failed: timeout, connection, redirect, http_status, oauth, ... */
  errorKind?: string;
  /** What went wrong, for support; also becomes the delivery's last_error. */
  errorMessage?: string;
  /** The first bytes of the merchant's answer. */
  responseBody?: string;
  /** The URL the callback was sent to, query string values masked (maskQueryValues); absent when nothing was sent. */
  url?: string;
}

/** The delivery's state after the attempt: delivered, waiting for its next try, or given up. */
export type AttemptOutcome = DeliveryStatus;

/** An attempt to record, with the state it leaves its delivery in. */
export interface AttemptRecord {
  deliveryId: string;
  /** When the delivery was stored (DeliveryToAttempt.storedAt): only its week's partition is read. Unknown: every week's. */
  storedAt?: Date;
  attempt: NewDeliveryAttempt;
  outcome: AttemptOutcome;
  /**
   * The attempt failed and the worker found every attempt to the target failing for
   * TARGET_AUTO_DISABLE_AFTER: switch the target off (reason `auto-disabled`), unless a success or
   * an admin changed it since it was loaded.
   */
  disableTarget?: boolean;
  /**
   * Whether the attempt may change its target's stored health (attemptChangesTargetHealth, from the
   * health seen at load). Only such attempts reach recordTargetHealth; default true.
   */
  changesTargetHealth?: boolean;
}

/** What was recorded of one attempt. */
export interface RecordedAttempt {
  /** The attempt's number, from 1, counting across replays. */
  number: number;
  /** This attempt switched its target off (`auto-disabled`). */
  targetAutoDisabled: boolean;
}

// PostgreSQL text cannot hold NUL, which a merchant's answer may contain.
function storable(text: string | undefined): string | null {
  return text === undefined ? null : text.replaceAll('\u0000', '');
}

// The statements are built in delivery-attempt-statements.ts; deliveryAttemptQueries below binds
// their parameters from the repository's records (the SQL snapshot compiles each).

/** One deferral of a delivery's job (not an attempt: no POST, no attempt spent). */
export interface DeferralRecord {
  deliveryId: string;
  reason: DeferralReason;
  at: Date;
  /**
   * When the delivery was stored (its job's storedAt); unknown: every week's partition is read. A
   * time that matches no row costs the deferral's count only (it is history, never retried).
   */
  storedAt?: Date;
}

/** Every statement of the repository, built from its parameters (the SQL snapshot compiles each). */
export const deliveryAttemptQueries = {
  /** Deliveries stored within `stored`, with their target and event, in one statement. */
  load: (deliveryIds: readonly string[], stored: StoredRange = EVERY_PARTITION) => loadStatement('load', { ids: deliveryIds, ...stored }),

  /**
   * Attempts of distinct deliveries, with their deliveries' new states. attempts_made goes up by
   * one and numbers the attempt, so numbers continue across replays, and two workers writing at
   * once (a job taken over after its lock expired) cannot take the same number. A delivery that
   * succeeded stays succeeded: a late failing attempt only adds its row. (In SET, the deliveries
   * columns read their values from before the update.)
   */
  record: (attempts: readonly AttemptInput[], stored: StoredRange = EVERY_PARTITION) =>
    recordStatement('record', {
      delivery_id: attempts.map((a) => a.delivery_id),
      outcome: attempts.map((a) => a.outcome),
      started_at: attempts.map((a) => a.started_at),
      duration_ms: attempts.map((a) => a.duration_ms),
      status_code: attempts.map((a) => a.status_code),
      error_kind: attempts.map((a) => a.error_kind),
      error_message: attempts.map((a) => a.error_message),
      response_body: attempts.map((a) => a.response_body),
      url: attempts.map((a) => a.url),
      ...stored,
    }),

  /** Adds deferrals to distinct deliveries, each with its latest time and reason. */
  defer: (deferrals: ReadonlyArray<{ deliveryId: string; count: number; at: Date; reason: DeferralReason }>, stored: StoredRange = EVERY_PARTITION) =>
    deferralStatement('defer', {
      ids: deferrals.map((d) => d.deliveryId),
      counts: deferrals.map((d) => d.count),
      ats: deferrals.map((d) => d.at),
      reasons: deferrals.map((d) => d.reason),
      ...stored,
    }),
};

export function deliveryAttemptRepository(pool: DatabasePool, targetCipher: CredentialsCipher) {
  const cipher = rememberingDecryptions(targetCipher);

  /** One statement for attempts of distinct deliveries. */
  const recordDistinct = async (records: readonly AttemptRecord[]): Promise<Map<string, number>> => {
    // Sorted, so that two workers recording overlapping batches lock rows in the same order.
    const sorted = [...records].sort((a, b) => compareStrings(a.deliveryId, b.deliveryId));
    const { rows } = await run(
      pool,
      deliveryAttemptQueries.record(
        sorted.map((r) => ({
          delivery_id: r.deliveryId,
          outcome: r.outcome,
          started_at: r.attempt.startedAt,
          duration_ms: Math.round(r.attempt.durationMs),
          status_code: r.attempt.statusCode ?? null,
          error_kind: r.attempt.errorKind ?? null,
          error_message: storable(r.attempt.errorMessage),
          response_body: storable(r.attempt.responseBody),
          url: r.attempt.url ?? null,
        })),
        storedRange(sorted.map((r) => r.storedAt)),
      ),
      { prepared: 'record-attempts' },
    );
    return new Map(rows.map((row) => [row.delivery_id, row.number]));
  };

  /** One statement for the work of these deliveries, read within `stored`. */
  const loadWork = async (ids: readonly string[], stored: StoredRange): Promise<Map<string, DeliveryWork>> => {
    // A named statement: each pooled connection parses and plans it once.
    const { rows } = await run(pool, deliveryAttemptQueries.load(ids, stored), { prepared: 'delivery-work' });
    const work = new Map<string, DeliveryWork>();
    // A batch often holds many deliveries of one target: its row (the same in every joined row
    // of one statement) is decrypted once, and its deliveries share the result (read only).
    const targets = new Map<string | null, DeliveryWork['target']>();
    for (const row of rows) {
      let target = targets.get(row.target_id);
      if (!target) {
        target = loadedTarget(cipher, row);
        targets.set(row.target_id, target);
      }
      work.set(row.delivery_id, {
        delivery: {
          id: row.delivery_id,
          eventId: row.delivery_event_id,
          targetId: row.delivery_target_id,
          status: row.delivery_status,
          attemptsMade: row.delivery_attempts_made,
          storedAt: row.delivery_created_at,
        },
        target,
        eventJson: row.event_json,
        predecessorId: row.predecessor_id,
      });
    }
    return work;
  };

  return {
    /**
     * Records deferrals in one statement: a delivery's count goes up by its deferrals in the batch,
     * and its last deferral's time and reason are kept. Deliveries that do not exist are skipped.
     */
    async recordDeferrals(records: readonly DeferralRecord[]): Promise<void> {
      const byDelivery = new Map<string, { deliveryId: string; count: number; at: Date; reason: DeferralReason }>();
      const stored: Array<Date | undefined> = [];
      for (const record of records) {
        if (!isUuid(record.deliveryId)) continue;
        stored.push(record.storedAt);
        const seen = byDelivery.get(record.deliveryId);
        if (!seen) byDelivery.set(record.deliveryId, { deliveryId: record.deliveryId, count: 1, at: record.at, reason: record.reason });
        else
          byDelivery.set(
            record.deliveryId,
            record.at >= seen.at ? { ...seen, count: seen.count + 1, at: record.at, reason: record.reason } : { ...seen, count: seen.count + 1 },
          );
      }
      if (byDelivery.size === 0) return;
      // Sorted, so that two workers writing overlapping batches lock rows in the same order.
      const sorted = [...byDelivery.values()].sort((a, b) => compareStrings(a.deliveryId, b.deliveryId));
      await run(pool, deliveryAttemptQueries.defer(sorted, storedRange(stored)), { prepared: 'record-deferrals' });
    },

    /**
     * What each delivery's attempt needs, by delivery id; unknown and malformed ids are absent.
     * `stored` (storedRange of the jobs' storedAt) narrows the partitions read; a delivery or event
     * not found within it (a time that does not match the rows) is looked for again in every partition.
     */
    async loadForAttempts(deliveryIds: readonly string[], stored: StoredRange = EVERY_PARTITION): Promise<Map<string, DeliveryWork>> {
      const ids = [...new Set(deliveryIds.filter((id) => isUuid(id)))];
      if (ids.length === 0) return new Map();
      const work = await loadWork(ids, stored);
      if (stored.from === null) return work;
      const missed = ids.filter((id) => !work.get(id)?.eventJson);
      if (missed.length > 0) for (const [id, found] of await loadWork(missed, EVERY_PARTITION)) work.set(id, found);
      return work;
    },

    /**
     * Records the targets' health (last success, run of failures, auto-disable), then the attempts
     * and their deliveries' new states, and returns what was recorded of each attempt, in the order
     * of `records`; undefined where the delivery does not exist. Attempts of distinct deliveries go
     * in one statement; a delivery named twice gets its attempts in turn.
     */
    async recordAttempts(records: readonly AttemptRecord[]): Promise<Array<RecordedAttempt | undefined>> {
      const numbers: Array<number | undefined> = records.map(() => undefined);
      // The targets first: whoever sees a delivery failed by an auto-disable finds its target
      // off, and the deliveries' new states are the last write before the worker goes on.
      const disabledTargets = await recordTargetHealth(
        pool,
        records.filter((record) => isUuid(record.deliveryId) && record.changesTargetHealth !== false),
      );
      let rest = records.map((record, index) => ({ record, index })).filter(({ record }) => isUuid(record.deliveryId));
      while (rest.length > 0) {
        const taken = new Set<string>();
        const round = rest.filter(({ record }) => !taken.has(record.deliveryId) && Boolean(taken.add(record.deliveryId)));
        rest = rest.filter((item) => !round.includes(item));
        const recorded = await recordDistinct(round.map(({ record }) => record));
        for (const { record, index } of round) numbers[index] = recorded.get(record.deliveryId);
      }
      return records.map((record, index) => {
        const number = numbers[index];
        if (number === undefined) return undefined;
        return { number, targetAutoDisabled: disabledTargets.has(record.deliveryId) };
      });
    },
  };
}

export type DeliveryAttemptRepository = ReturnType<typeof deliveryAttemptRepository>;
