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
    // A target that delivers each object's callbacks in order (ordering `object`): the nearest
    // earlier delivery of the same object to it that has no final outcome yet, which this one must
    // wait for (docs/delivery.md). The condition on the target's ordering comes first, so that for
    // every other target PostgreSQL skips the lookup (a one-time filter). The object's earlier
    // events are read newest first, each probed for its deliveries by their unique key, never by a
    // scan of the target's pending deliveries, which a backlog makes long; a delivery is stored
    // with or after its event, so its older weeks are not read.
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('events as pe')
          // By the event alone (OFFSET 0 keeps the target and status conditions out of the
          // subquery): an event has a delivery or two, found by the (event_id, …) unique key;
          // given the target too, PostgreSQL may scan the target's pending deliveries instead.
          .innerJoinLateral(
            (inner) =>
              inner
                .selectFrom('deliveries as pd')
                .select(['pd.id', 'pd.target_id', 'pd.status'])
                .whereRef('pd.event_id', '=', 'pe.id')
                .whereRef('pd.created_at', '>=', 'pe.ingested_at')
                .offset(sql.lit(0))
                .as('pd'),
            (join) => join.onTrue(),
          )
          .select('pd.id')
          .whereRef('pd.target_id', '=', 'd.target_id')
          .where('pd.status', '=', sql.lit('pending'))
          .where(sql<boolean>`t.ordering = 'object'`)
          .whereRef('pe.object_id', '=', 'e.object_id')
          .whereRef('pe.object_type', '=', 'e.object_type')
          .whereRef('pe.program_id', '=', 'e.program_id')
          .where(sql<boolean>`pe.merchant_id IS NOT DISTINCT FROM e.merchant_id`)
          .whereRef('pe.sequence', '<', 'e.sequence')
          .orderBy('pe.sequence', 'desc')
          .limit(sql.lit(1))
          .as('p'),
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
      't.ordering as target_ordering',
      't.disabled_reason as target_disabled_reason',
      't.failing_since as target_failing_since',
      't.last_success_at as target_last_success_at',
      't.deleted_at as target_deleted_at',
      't.delivery_policy as target_delivery_policy',
      't.signing_secrets as target_signing_secrets',
      't.signing_grace_ends_at as target_signing_grace_ends_at',
      eventJson('e').as('event_json'),
      'p.id as predecessor_id',
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
            // An attempt was made: the delivery no longer waits for a predecessor.
            waiting_for: sql<string | null>`NULL`,
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

/**
 * The stored health of the targets of these deliveries, one row per delivery, in target id order
 * (`lock`: each target row locked until the transaction ends, taken in that order so that two
 * workers recording overlapping batches cannot deadlock). The rule that decides the next health is
 * targetHealthAfter (@herald/domain); this only reads.
 */
export const targetHealthStatement = byShape((shape: 'read' | 'lock', v: { ids: readonly string[] } & StoredRange) => {
  const query = db
    .selectFrom('deliveries as d')
    .innerJoin('notification_targets as t', 't.id', 'd.target_id')
    .select(['d.id as delivery_id', 't.id', 't.enabled', 't.failing_since', 't.last_success_at', 't.disabled_reason', 't.disabled_at'])
    // As in the record statement: the ids as an index condition on every partition.
    .where('d.id', '=', (eb) => eb.fn.any(sql<string[]>`${v.ids}::uuid[]`))
    .where(storedWithin('d.created_at', v))
    .orderBy('t.id')
    .orderBy('d.id');
  // NO KEY: the lock UPDATE takes anyway, which leaves ingest free to add deliveries (their
  // foreign key takes KEY SHARE on the target) while it is held.
  return shape === 'lock' ? query.forNoKeyUpdate('t') : query;
});

/** A target's health as targetHealthAfter decided it: the columns of the health write's unnest. */
export type TargetHealthInput = {
  id: string;
  last_success_at: Date | null;
  failing_since: Date | null;
  enabled: boolean;
  disabled_reason: string | null;
  disabled_at: Date | null;
};
type TargetHealthColumns = { [K in keyof TargetHealthInput]: Array<TargetHealthInput[K]> };

/** Stores targets' health as given, row by row: no rule here (see targetHealthAfter). */
export const targetHealthWriteStatement = byShape((_shape: 'write', c: TargetHealthColumns) =>
  db
    .updateTable('notification_targets as t')
    .from(
      sql<TargetHealthInput>`unnest(${c.id}::uuid[], ${c.last_success_at}::timestamptz[], ${c.failing_since}::timestamptz[], ${c.enabled}::bool[], ${c.disabled_reason}::text[], ${c.disabled_at}::timestamptz[])`.as<'i'>(
        sql`i(id, last_success_at, failing_since, enabled, disabled_reason, disabled_at)`,
      ),
    )
    .set((eb) => ({
      last_success_at: eb.ref('i.last_success_at'),
      failing_since: eb.ref('i.failing_since'),
      enabled: eb.ref('i.enabled'),
      disabled_reason: eb.ref('i.disabled_reason'),
      disabled_at: eb.ref('i.disabled_at'),
    }))
    .whereRef('t.id', '=', 'i.id'),
);
