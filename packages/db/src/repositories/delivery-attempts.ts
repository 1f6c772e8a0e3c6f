import { AUTO_DISABLED_REASON, compareStrings, isUuid, LAST_SUCCESS_PRECISION_MS } from '@herald/domain';
import type { DatabasePool } from '../pool';
import { CredentialsCipherError, type CredentialsCipher } from '../credentials-cipher';
import type { DeliveryStatus } from '../generated/kysely/schema';
import { byShape, db, run, sql, type RowOf } from '../sql';
import { EVERY_PARTITION, storedRange, storedWithin, type StoredRange } from '../stored-range';
import { eventJson } from './event-json';
import { deliveryTargetOf } from './target-rows';
import { storedSigning } from './target-signing';
import type { DeliveryTarget } from './target-types';

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

/**
 * A delivery's target as loaded for an attempt: `ready`, its credentials and signing secrets
 * decrypted; `unreadable` when no key of SECRETS decrypts them (data, not an error: one unreadable
 * target fails only its own deliveries, and `message` says which key is missing); `missing` when
 * the row is gone.
 */
export type LoadedTarget =
  | { readonly state: 'ready'; readonly target: DeliveryTarget }
  | { readonly state: 'unreadable'; readonly message: string }
  | { readonly state: 'missing' };

const MISSING_TARGET: LoadedTarget = Object.freeze({ state: 'missing' });

/** Everything one attempt needs, read in one statement. */
export interface DeliveryWork {
  delivery: DeliveryToAttempt;
  target: LoadedTarget;
  /** The event's JSON exactly as GET /events returns it (eventJson); null when the row is gone. */
  eventJson: string | null;
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
   * health seen at load). Only such attempts go through the health statement; default true.
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

/** What recordAttempts writes of one attempt: the unnest columns of the record statement. */
type AttemptInput = {
  delivery_id: string;
  outcome: DeliveryStatus;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  error_kind: string | null;
  error_message: string | null;
  response_body: string | null;
  url: string | null;
};

/** The columns of AttemptInput, one array each: the parameters of the record statement's unnest. */
type AttemptColumns = { [K in keyof AttemptInput]: Array<AttemptInput[K]> };

// The worker runs both statements on every batch of jobs: each is built and compiled once (byShape),
// which Kysely would otherwise do per batch (measured: about a tenth of the worker's CPU).
const loadStatement = byShape((_shape: 'load', v: { ids: readonly string[] } & StoredRange) =>
  db
    .selectFrom('deliveries as d')
    // Looked up per delivery (LATERAL, with a LIMIT that keeps the planner from flattening it: a
    // nested loop over each primary key), never hash-joined: the planner cannot tell that a batch's
    // ids match one row each across the deliveries partitions, and while a new week's partition has
    // no statistics it would otherwise scan every event and every target for each batch.
    .leftJoinLateral(
      (eb) => eb.selectFrom('notification_targets').selectAll().whereRef('notification_targets.id', '=', 'd.target_id').limit(sql.lit(1)).as('t'),
      (join) => join.onTrue(),
    )
    // An event id is in one month only: the month of the batch's stored range, usually. Without the
    // range (a job queued without storedAt), a callback's event is almost always recent: looked up
    // from the newest month back (ingested_at is the partition key, so PostgreSQL reads the months
    // in that order and stops at the first row), a delivery costs the months ahead (empty) and its
    // own, not one index probe per month kept (measured over 13 months: a quarter of the buffers).
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('events')
          .selectAll()
          .whereRef('events.id', '=', 'd.event_id')
          .where(storedWithin('events.ingested_at', v))
          .orderBy('events.ingested_at', 'desc')
          .limit(sql.lit(1))
          .as('e'),
      (join) => join.onTrue(),
    )
    .select([
      'd.id as delivery_id',
      'd.event_id as delivery_event_id',
      'd.target_id as delivery_target_id',
      'd.status as delivery_status',
      'd.attempts_made as delivery_attempts_made',
      'd.created_at as delivery_created_at',
      't.id as target_id',
      't.program_id as target_program_id',
      't.merchant_id as target_merchant_id',
      't.url as target_url',
      't.auth_mode as target_auth_mode',
      't.auth_url as target_auth_url',
      't.token_request as target_token_request',
      't.oauth_scope as target_oauth_scope',
      't.credentials as target_credentials',
      't.object_types as target_object_types',
      't.event_types as target_event_types',
      't.enabled as target_enabled',
      't.disabled_reason as target_disabled_reason',
      't.failing_since as target_failing_since',
      't.last_success_at as target_last_success_at',
      't.deleted_at as target_deleted_at',
      't.signing_secrets as target_signing_secrets',
      't.signing_grace_ends_at as target_signing_grace_ends_at',
      eventJson('e').as('event_json'),
    ])
    .where('d.id', '=', (eb) => eb.fn.any(sql<string[]>`${v.ids}::uuid[]`))
    .where(storedWithin('d.created_at', v)),
);

const recordStatement = byShape((_shape: 'record', c: AttemptColumns & StoredRange) =>
  db
    .with('input', (cte) =>
      cte
        .selectFrom(
          sql<AttemptInput>`unnest(${c.delivery_id}::uuid[], ${c.outcome}::delivery_status[], ${c.started_at}::timestamptz[], ${c.duration_ms}::int[], ${c.status_code}::int[], ${c.error_kind}::text[], ${c.error_message}::text[], ${c.response_body}::text[], ${c.url}::text[])`.as<'i'>(
            sql`i(delivery_id, outcome, started_at, duration_ms, status_code, error_kind, error_message, response_body, url)`,
          ),
        )
        .selectAll(),
    )
    .with('updated', (cte) =>
      cte
        .updateTable('deliveries as d')
        .from('input as i')
        .set((eb) => {
          const kept = eb('d.status', '=', sql.lit('succeeded'));
          return {
            attempts_made: eb('d.attempts_made', '+', sql.lit(1)),
            updated_at: sql<Date>`now()`,
            status: eb.case().when(kept).then(eb.ref('d.status')).else(eb.ref('i.outcome')).end(),
            last_status_code: eb.case().when(kept).then(eb.ref('d.last_status_code')).else(eb.ref('i.status_code')).end(),
            last_error: eb.case().when(kept).then(eb.ref('d.last_error')).else(eb.ref('i.error_message')).end(),
            completed_at: eb
              .case()
              .when(kept)
              .then(eb.ref('d.completed_at'))
              .when('i.outcome', '=', sql.lit('pending'))
              .then(sql<Date | null>`NULL`)
              .else(sql<Date>`now()`)
              .end(),
          };
        })
        .whereRef('d.id', '=', 'i.delivery_id')
        // The ids again, as an index condition each partition can use: joined to the unnest only,
        // a partition without statistics yet (a new week filling up) gets a sequential scan.
        .where('d.id', '=', (eb) => eb.fn.any(sql<string[]>`${c.delivery_id}::uuid[]`))
        .where(storedWithin('d.created_at', c))
        .returning(['d.id', 'd.created_at', 'd.attempts_made']),
    )
    .insertInto('delivery_attempts')
    // delivery_created_at: the attempt goes to its delivery's partition (see schema.prisma).
    .columns([
      'delivery_id',
      'delivery_created_at',
      'number',
      'started_at',
      'duration_ms',
      'status_code',
      'error_kind',
      'error_message',
      'response_body',
      'url',
    ])
    .expression((eb) =>
      eb
        .selectFrom('updated as u')
        .innerJoin('input as i', 'i.delivery_id', 'u.id')
        .select([
          'u.id',
          'u.created_at',
          'u.attempts_made',
          'i.started_at',
          'i.duration_ms',
          'i.status_code',
          'i.error_kind',
          'i.error_message',
          'i.response_body',
          'i.url',
        ]),
    )
    .returning(['delivery_id', 'number']),
);

/** Why a job went back to wait without a POST: its target's breaker was open, or the target had TARGET_MAX_IN_FLIGHT callbacks in flight. */
export type DeferralReason = 'breaker_open' | 'target_busy';

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

const deferralStatement = byShape((_shape: 'defer', c: { ids: string[]; counts: number[]; ats: Date[]; reasons: string[] } & StoredRange) =>
  db
    .updateTable('deliveries as d')
    .from(
      sql<{
        delivery_id: string;
        n: number;
        at: Date;
        reason: string;
      }>`unnest(${c.ids}::uuid[], ${c.counts}::int[], ${c.ats}::timestamptz[], ${c.reasons}::text[])`.as<'i'>(sql`i(delivery_id, n, at, reason)`),
    )
    .set((eb) => ({
      deferrals: eb('d.deferrals', '+', eb.ref('i.n')),
      last_deferred_at: eb.ref('i.at'),
      last_deferral_reason: eb.ref('i.reason'),
    }))
    .whereRef('d.id', '=', 'i.delivery_id')
    // As in the record statement: an index condition on every partition, statistics or not.
    .where('d.id', '=', (eb) => eb.fn.any(sql<string[]>`${c.ids}::uuid[]`))
    .where(storedWithin('d.created_at', c)),
);

/** What the health statement reads of one recorded attempt. */
type TargetOutcomeInput = { delivery_id: string; succeeded: boolean; started_at: Date; disable: boolean };
type TargetOutcomeColumns = { [K in keyof TargetOutcomeInput]: Array<TargetOutcomeInput[K]> };

/**
 * The targets' side of a batch of attempts: a 200 ends the run of failures and sets
 * last_success_at (to within LAST_SUCCESS_PRECISION_MS); a failure starts one (failing_since) unless one is running; a failure the worker marked
 * `disable` switches an enabled, still failing target off as `auto-disabled`. The rows are locked
 * in id order first, so that two workers recording overlapping batches cannot deadlock. Returns,
 * for each target this batch switched off, the one attempt that reports it.
 */
const healthStatement = byShape((_shape: 'health', c: TargetOutcomeColumns & StoredRange) =>
  db
    .with('input', (cte) =>
      cte
        .selectFrom(
          sql<TargetOutcomeInput>`unnest(${c.delivery_id}::uuid[], ${c.succeeded}::bool[], ${c.started_at}::timestamptz[], ${c.disable}::bool[])`.as<'i'>(
            sql`i(delivery_id, succeeded, started_at, disable)`,
          ),
        )
        .selectAll(),
    )
    .with('per_target', (cte) =>
      cte
        .selectFrom('input as i')
        .innerJoin('deliveries as d', 'd.id', 'i.delivery_id')
        // As in the record statement: the ids as an index condition on every partition.
        .where('d.id', '=', (eb) => eb.fn.any(sql<string[]>`${c.delivery_id}::uuid[]`))
        .where(storedWithin('d.created_at', c))
        .select((eb) => [
          'd.target_id',
          eb.fn<boolean>('bool_or', ['i.succeeded']).as('succeeded'),
          sql<Date | null>`max(i.started_at) FILTER (WHERE i.succeeded)`.as('last_success'),
          sql<Date | null>`min(i.started_at) FILTER (WHERE NOT i.succeeded)`.as('first_failure'),
          eb.fn<boolean>('bool_or', ['i.disable']).as('disable'),
        ])
        .groupBy('d.target_id'),
    )
    .with('locked', (cte) =>
      cte
        .selectFrom('notification_targets as t')
        .innerJoin('per_target as p', 'p.target_id', 't.id')
        .select((eb) => [
          't.id',
          'p.succeeded',
          'p.last_success',
          'p.first_failure',
          eb.and([eb.ref('p.disable'), eb.not(eb.ref('p.succeeded')), eb.ref('t.enabled'), eb('t.failing_since', 'is not', null)]).as('auto_disable'),
        ])
        // Only targets whose stored health changes: in the steady state (a target that keeps
        // answering, or keeps failing) a batch locks and writes no target row, so workers
        // recording batches of the same busy target never wait on each other here.
        .where(
          sql<boolean>`CASE WHEN p.succeeded
            THEN t.failing_since IS NOT NULL OR t.last_success_at IS NULL OR t.last_success_at < p.last_success - ${sql.lit(`${LAST_SUCCESS_PRECISION_MS} milliseconds`)}::interval
            ELSE t.failing_since IS NULL OR p.disable END`,
        )
        .orderBy('t.id')
        // NO KEY: the lock UPDATE takes anyway, which leaves ingest free to add deliveries (their
        // foreign key takes KEY SHARE on the target) while it is held.
        .forNoKeyUpdate('t'),
    )
    .with('updated', (cte) =>
      cte
        .updateTable('notification_targets as t')
        .from('locked as l')
        .set((eb) => ({
          // greatest() skips NULLs: an older success recorded late never moves the time back.
          last_success_at: sql<Date | null>`greatest(t.last_success_at, l.last_success)`,
          failing_since: eb
            .case()
            .when(eb.ref('l.succeeded'))
            .then(sql<Date | null>`NULL`)
            .else(sql<Date | null>`coalesce(t.failing_since, l.first_failure)`)
            .end(),
          enabled: eb.case().when(eb.ref('l.auto_disable')).then(sql.lit(false)).else(eb.ref('t.enabled')).end(),
          disabled_reason: eb.case().when(eb.ref('l.auto_disable')).then(sql.lit(AUTO_DISABLED_REASON)).else(eb.ref('t.disabled_reason')).end(),
          disabled_at: eb.case().when(eb.ref('l.auto_disable')).then(sql<Date>`now()`).else(eb.ref('t.disabled_at')).end(),
        }))
        .whereRef('t.id', '=', 'l.id')
        .returning(['t.id', 'l.auto_disable']),
    )
    // One attempt per switched-off target that asked for it: the one that reports it (one warning).
    .selectFrom('input as i')
    .innerJoin('deliveries as d', 'd.id', 'i.delivery_id')
    .innerJoin('updated as u', 'u.id', 'd.target_id')
    .distinctOn('d.target_id')
    .select('i.delivery_id')
    .where((eb) =>
      eb.and([
        eb.ref('i.disable'),
        eb.ref('u.auto_disable'),
        eb('d.id', '=', eb.fn.any(sql<string[]>`${c.delivery_id}::uuid[]`)),
        storedWithin('d.created_at', c),
      ]),
    )
    .orderBy('d.target_id')
    .orderBy('i.delivery_id'),
);

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

  /** The targets' health after a batch of attempts (see healthStatement). */
  health: (outcomes: readonly TargetOutcomeInput[], stored: StoredRange = EVERY_PARTITION) =>
    healthStatement('health', {
      delivery_id: outcomes.map((o) => o.delivery_id),
      succeeded: outcomes.map((o) => o.succeeded),
      started_at: outcomes.map((o) => o.started_at),
      disable: outcomes.map((o) => o.disable),
      ...stored,
    }),
};

type WorkRow = RowOf<ReturnType<typeof deliveryAttemptQueries.load>>;

/** Most decrypted ciphertexts the worker keeps; past it, the memo starts again empty. */
const DECRYPTED_MAX = 1_000;

/**
 * `cipher`, remembering what it decrypted: a busy worker loads the same few targets batch after
 * batch, and opening their ciphertexts was about 2 % of its CPU. A ciphertext is never rewritten
 * in place (a new secret, a rotation or a re-encryption stores a new one, with a fresh IV), so a
 * remembered value is never stale. The secrets stay in the worker's memory between batches, as
 * they already did while a batch ran; a failure is not remembered, and throws at every load.
 */
function rememberingDecryptions(cipher: CredentialsCipher): CredentialsCipher {
  const remember = <T>(decrypt: (ciphertext: string, targetId: string) => T) => {
    const decrypted = new Map<string, T>();
    return (ciphertext: string, targetId: string): T => {
      const key = `${targetId} ${ciphertext}`;
      let value = decrypted.get(key);
      if (value === undefined) {
        value = decrypt(ciphertext, targetId);
        if (decrypted.size >= DECRYPTED_MAX) decrypted.clear();
        decrypted.set(key, value);
      }
      return value;
    };
  };
  return {
    currentKeyId: cipher.currentKeyId,
    encrypt: (credentials, targetId) => cipher.encrypt(credentials, targetId),
    encryptSigningSecrets: (secrets, targetId) => cipher.encryptSigningSecrets(secrets, targetId),
    decrypt: remember((ciphertext, targetId) => cipher.decrypt(ciphertext, targetId)),
    decryptSigningSecrets: remember((ciphertext, targetId) => cipher.decryptSigningSecrets(ciphertext, targetId)),
  };
}

export function deliveryAttemptRepository(pool: DatabasePool, targetCipher: CredentialsCipher) {
  const cipher = rememberingDecryptions(targetCipher);

  const targetOf = async (row: WorkRow): Promise<DeliveryWork['target']> => {
    // Left-joined: the target's columns are null together, when the row is gone.
    if (row.target_id === null) return MISSING_TARGET;
    try {
      // A target created before signatures gets its secret here, once, so that every callback is signed.
      const signing = await storedSigning(pool, cipher, row.target_id, {
        signing_secrets: row.target_signing_secrets,
        signing_grace_ends_at: row.target_signing_grace_ends_at,
      });
      const target = deliveryTargetOf(
        {
          id: row.target_id,
          program_id: row.target_program_id!,
          merchant_id: row.target_merchant_id,
          url: row.target_url!,
          auth_mode: row.target_auth_mode!,
          auth_url: row.target_auth_url,
          token_request: row.target_token_request,
          oauth_scope: row.target_oauth_scope,
          credentials: row.target_credentials,
          object_types: row.target_object_types!,
          event_types: row.target_event_types!,
          enabled: row.target_enabled!,
          disabled_reason: row.target_disabled_reason,
          failing_since: row.target_failing_since,
          last_success_at: row.target_last_success_at,
          deleted_at: row.target_deleted_at,
        },
        cipher,
        signing,
      );
      return { state: 'ready', target };
    } catch (error) {
      if (error instanceof CredentialsCipherError) return { state: 'unreadable', message: error.message };
      throw error;
    }
  };

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
    const targets = new Map<string | null, Promise<DeliveryWork['target']>>();
    for (const row of rows) {
      let target = targets.get(row.target_id);
      if (!target) {
        target = targetOf(row);
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
        target: await target,
        eventJson: row.event_json,
      });
    }
    return work;
  };

  /** Updates the targets of recorded attempts; returns the deliveries whose target this switched off. */
  const recordTargetHealth = async (records: readonly AttemptRecord[]): Promise<Set<string>> => {
    if (records.length === 0) return new Set();
    const statement = deliveryAttemptQueries.health(
      records.map((r) => ({
        delivery_id: r.deliveryId,
        succeeded: r.outcome === 'succeeded',
        started_at: r.attempt.startedAt,
        disable: r.disableTarget === true,
      })),
      storedRange(records.map((r) => r.storedAt)),
    );
    const { rows } = await run(pool, statement, { prepared: 'record-target-health' });
    return new Set(rows.map((row) => row.delivery_id));
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
      const disabledTargets = await recordTargetHealth(records.filter((record) => isUuid(record.deliveryId) && record.changesTargetHealth !== false));
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
