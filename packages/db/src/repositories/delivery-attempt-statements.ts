import { AUTO_DISABLED_REASON, LAST_SUCCESS_PRECISION_MS } from '@herald/domain';
import type { DeliveryStatus } from '../generated/kysely/schema';
import { byShape, db, sql } from '../sql';
import { storedWithin, type StoredRange } from '../stored-range';
import { eventJson } from './event-json';

// The delivery worker's statements, each built and compiled once per shape (byShape); the
// repository's deliveryAttemptQueries (delivery-attempts.ts) binds their parameters.

/** What recordAttempts writes of one attempt: the unnest columns of the record statement. */
export type AttemptInput = {
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
export const loadStatement = byShape((_shape: 'load', v: { ids: readonly string[] } & StoredRange) =>
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

export const recordStatement = byShape((_shape: 'record', c: AttemptColumns & StoredRange) =>
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

export const deferralStatement = byShape((_shape: 'defer', c: { ids: string[]; counts: number[]; ats: Date[]; reasons: string[] } & StoredRange) =>
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
export type TargetOutcomeInput = { delivery_id: string; succeeded: boolean; started_at: Date; disable: boolean };
type TargetOutcomeColumns = { [K in keyof TargetOutcomeInput]: Array<TargetOutcomeInput[K]> };

/**
 * The targets' side of a batch of attempts: a 200 ends the run of failures and sets
 * last_success_at (to within LAST_SUCCESS_PRECISION_MS); a failure starts one (failing_since) unless one is running; a failure the worker marked
 * `disable` switches an enabled, still failing target off as `auto-disabled`. The rows are locked
 * in id order first, so that two workers recording overlapping batches cannot deadlock. Returns,
 * for each target this batch switched off, the one attempt that reports it.
 */
export const healthStatement = byShape((_shape: 'health', c: TargetOutcomeColumns & StoredRange) =>
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
