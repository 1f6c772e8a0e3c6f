import type { Event } from '@herald/domain';
import { byShape, db, rawStatement, sql } from '../sql';
import { EVENT_COLUMNS } from './event-json';

/** An event ready to store: every Event field but its sequence (id and createdAt assigned), plus its tenant. */
export interface NewEvent {
  event: Omit<Event, 'sequence'>;
  programId: string;
  merchantId?: string;
  /** SHA-256 of the producer's content: equal content makes a re-post a no-op, different content a conflict. */
  contentHash: string;
}

/** A JSON column's parameter: the value's JSON text, or SQL NULL when the field is absent. */
function jsonOrNull(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

/**
 * The ingest month's advisory lock (two int keys): "Hera", then 1. Each ingest holds it shared
 * until it commits; advancing the month takes it exclusive.
 */
const INGEST_MONTH_LOCK = sql.lit(0x4865_7261);
const INGEST_MONTH_LOCK_KEY = sql.lit(1);

/**
 * When an ingest transaction stores its rows: its start, rounded to milliseconds as the
 * ingested_at and created_at columns round their default `now()`.
 */
const TRANSACTION_TIME = sql<Date>`now()::timestamptz(3)`;

/** The month an ingest transaction stores into: an ingest a fraction of a millisecond before midnight is the next month's. */
const TRANSACTION_MONTH = sql<Date>`date_trunc('month', ${TRANSACTION_TIME}, 'UTC')`;

// The ingest's statements, built and compiled once each (byShape): an ingest runs all of them for
// every batch, however small (measured: a tenth less events-api CPU per single-event ingest than
// with Kysely building and compiling each statement every time).

const findTenantsStatement = byShape((_shape: 'find-tenants', v: { programIds: readonly string[]; merchantIds: readonly string[] }) =>
  db
    .selectFrom('programs')
    .select(['id as program_id', sql<string | null>`NULL`.as('merchant_id')])
    .where('id', '=', (eb) => eb.fn.any(sql<string[]>`${v.programIds}::text[]`))
    .unionAll(
      db
        .selectFrom('merchants')
        .select(['program_id', 'id as merchant_id'])
        .where('id', '=', (eb) => eb.fn.any(sql<string[]>`${v.merchantIds}::text[]`)),
    ),
);

const holdIngestMonthStatement = byShape((_shape: 'hold-ingest-month', _v: Record<string, never>) =>
  db.selectNoFrom(sql<void>`pg_advisory_xact_lock_shared(${INGEST_MONTH_LOCK}, ${INGEST_MONTH_LOCK_KEY})`.as('held')),
);

const ingestMonthIsCurrentStatement = byShape((_shape: 'ingest-month-is-current', _v: Record<string, never>) =>
  db.selectFrom('event_ingest_month').select([sql<boolean>`"month" = ${TRANSACTION_MONTH}`.as('current'), TRANSACTION_TIME.as('stored_at')]),
);

/** The columns of a batch of new events, one array each: the parameters of the insert's unnest. */
interface NewEventColumns {
  ids: string[];
  programIds: string[];
  merchantIds: Array<string | null>;
  createdAts: string[];
  sourceSystems: Array<string | null>;
  origins: string[];
  eventTypes: string[];
  objectIds: string[];
  objectTypes: string[];
  metadata: Array<string | null>;
  data: Array<string | null>;
  contexts: Array<string | null>;
  contentHashes: string[];
}

/** The object keys of a batch's events, one array each, with their ids: the parameters of the numbering's unnest. */
interface EventObjectColumns {
  ids: string[];
  programIds: string[];
  /** '' for a program's own event, as object_sequences keys it. */
  merchantKeys: string[];
  objectTypes: string[];
  objectIds: string[];
}

/**
 * Moves each object's last sequence number on by its events in the batch that no month holds yet,
 * and returns how many events that numbers. The objects' rows are locked (or inserted) in key
 * order, by every ingest, so two ingests of overlapping objects never wait for each other; the
 * locks are held to the COMMIT, so the insert that follows numbers each object's events after
 * every event stored before them, and no other ingest numbers that object meanwhile.
 */
const numberNewStatement = byShape((_shape: 'number-new', v: EventObjectColumns) =>
  rawStatement(sql<{ numbered: string }>`WITH counted AS MATERIALIZED (
  SELECT new.program_id, new.merchant_key, new.object_type, new.object_id, count(DISTINCT new.id)::int AS n
  FROM unnest(${v.ids}::text[], ${v.programIds}::text[], ${v.merchantKeys}::text[], ${v.objectTypes}::text[], ${v.objectIds}::text[])
    AS new (id, program_id, merchant_key, object_type, object_id)
  WHERE NOT EXISTS (SELECT 1 FROM events WHERE events.id = new.id)
  GROUP BY new.program_id, new.merchant_key, new.object_type, new.object_id
), bumped AS (
  INSERT INTO object_sequences (program_id, merchant_id, object_type, object_id, last_sequence)
  SELECT program_id, merchant_key, object_type, object_id, n FROM counted
  ORDER BY program_id, merchant_key, object_type, object_id
  ON CONFLICT (program_id, merchant_id, object_type, object_id)
  DO UPDATE SET last_sequence = object_sequences.last_sequence + excluded.last_sequence
  RETURNING 1
)
SELECT coalesce(sum(n), 0)::text AS numbered FROM counted`),
);

const insertNewStatement = byShape((_shape: 'insert-new', v: NewEventColumns) =>
  db
    .insertInto('events')
    .columns([
      'id',
      'program_id',
      'merchant_id',
      'created_at',
      'source_system',
      'origin',
      'event_type',
      'object_id',
      'object_type',
      'sequence',
      'metadata',
      'data',
      'context',
      'content_hash',
    ])
    // Each object's new events take the numbers numberNewStatement reserved, the last ones up to
    // its row's last_sequence, in the batch's order (WITH ORDINALITY). Counted here over the same
    // rule (no month holds the id); should the two statements disagree (an ingest of the same id
    // committed in between), insertNewEvents sees fewer rows than numbers and the ingest runs again.
    .expression(
      sql`SELECT new.id, new.program_id, new.merchant_id, new.created_at, new.source_system, new.origin, new.event_type, new.object_id, new.object_type,
  s.last_sequence - count(*) OVER object + row_number() OVER (object ORDER BY new.position), new.metadata, new.data, new.context, new.content_hash
FROM (
  -- An id given twice in one batch is stored (and numbered) once, at its first place.
  SELECT DISTINCT ON (id) * FROM unnest(${v.ids}::text[], ${v.programIds}::text[], ${v.merchantIds}::text[], ${v.createdAts}::timestamptz[], ${v.sourceSystems}::text[], ${v.origins}::text[], ${v.eventTypes}::text[], ${v.objectIds}::text[], ${v.objectTypes}::text[], ${v.metadata}::jsonb[], ${v.data}::jsonb[], ${v.contexts}::text[], ${v.contentHashes}::text[])
    WITH ORDINALITY AS given (id, program_id, merchant_id, created_at, source_system, origin, event_type, object_id, object_type, metadata, data, context, content_hash, position)
  ORDER BY id, position
) AS new
JOIN object_sequences s ON s.program_id = new.program_id AND s.merchant_id = coalesce(new.merchant_id, '') AND s.object_type = new.object_type AND s.object_id = new.object_id
WHERE NOT EXISTS (SELECT 1 FROM events WHERE events.id = new.id)
WINDOW object AS (PARTITION BY new.program_id, new.merchant_id, new.object_type, new.object_id)
ORDER BY new.id`,
    )
    // No conflict target: the arbiter is the month's own unique index on id. Of two ingests of one
    // id, the second waits at that index for the first to end, holding the ids it inserted before;
    // inserted in id order, by every ingest, the ids two batches share are waited for in one order,
    // so no two ingests wait for each other.
    .onConflict((oc) => oc.doNothing())
    .returning(['id', 'sequence']),
);

/** The ingest's statements on the events table, built from their parameters (part of eventQueries). */
export const eventIngestQueries = {
  findTenants: (programIds: readonly string[], merchantIds: readonly string[]) => findTenantsStatement('find-tenants', { programIds, merchantIds }),

  holdIngestMonth: () => holdIngestMonthStatement('hold-ingest-month', {}),

  ingestMonthIsCurrent: () => ingestMonthIsCurrentStatement('ingest-month-is-current', {}),

  takeIngestMonth: () => db.selectNoFrom(sql<void>`pg_advisory_xact_lock(${INGEST_MONTH_LOCK}, ${INGEST_MONTH_LOCK_KEY})`.as('taken')),

  /** Run holding the lock exclusive (takeIngestMonth); a no-op when another ingest advanced it first. */
  advanceIngestMonth: () => db.updateTable('event_ingest_month').set({ month: TRANSACTION_MONTH }),

  numberNew: (batch: readonly NewEvent[]) =>
    numberNewStatement('number-new', {
      ids: batch.map((b) => b.event.id),
      programIds: batch.map((b) => b.programId),
      merchantKeys: batch.map((b) => b.merchantId ?? ''),
      objectTypes: batch.map((b) => b.event.objectType),
      objectIds: batch.map((b) => b.event.objectId),
    }),

  insertNew: (batch: readonly NewEvent[]) =>
    insertNewStatement('insert-new', {
      ids: batch.map((b) => b.event.id),
      programIds: batch.map((b) => b.programId),
      merchantIds: batch.map((b) => b.merchantId ?? null),
      // An RFC 3339 time as the event carries it (the ingest has normalised it): PostgreSQL reads it.
      createdAts: batch.map((b) => b.event.createdAt),
      sourceSystems: batch.map((b) => b.event.sourceSystem ?? null),
      origins: batch.map((b) => b.event.origin),
      eventTypes: batch.map((b) => b.event.eventType),
      objectIds: batch.map((b) => b.event.objectId),
      objectTypes: batch.map((b) => b.event.objectType),
      metadata: batch.map((b) => jsonOrNull(b.event.metadata)),
      data: batch.map((b) => jsonOrNull(b.event.data)),
      contexts: batch.map((b) => b.event.context ?? null),
      contentHashes: batch.map((b) => b.contentHash),
    }),

  loadStored: (eventIds: readonly string[]) =>
    db
      .selectFrom('events as e')
      .select([...EVENT_COLUMNS, 'e.content_hash'])
      .where('e.id', '=', (eb) => eb.fn.any(sql<string[]>`${eventIds}::text[]`)),
};
