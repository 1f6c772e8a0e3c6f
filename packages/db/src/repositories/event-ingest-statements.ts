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

/**
 * Inserts the batch's events that no month holds yet, each numbered within its object, in one
 * statement:
 * - `new`: the events no month holds, looked up once each;
 * - `reserved`: each of their objects' row of object_sequences locked (inserted when missing) and
 *   moved on by its new events, in key order (by every ingest, so two ingests of overlapping objects
 *   never wait for each other), held to the COMMIT; ON CONFLICT works on the row's latest version,
 *   so an object another ingest numbered after this statement's snapshot is numbered on from there;
 * - `inserted`: the events, each object's numbered from the reserved ones in the batch's order.
 * Answers one row per inserted event (id, sequence) and, on every row, how many it meant to insert:
 * fewer inserted means a concurrent ingest was storing one of the ids (the insert waited at the
 * month's unique index and skipped it, after numbering it), and insertNewEvents runs the ingest again.
 */
const insertNewStatement = byShape((_shape: 'insert-new', v: NewEventColumns) =>
  rawStatement(sql<{ id: string | null; sequence: number | null; meant: number }>`WITH new AS MATERIALIZED (
  SELECT given.*, coalesce(given.merchant_id, '') AS merchant_key
  FROM unnest(${v.ids}::text[], ${v.programIds}::text[], ${v.merchantIds}::text[], ${v.createdAts}::timestamptz[], ${v.sourceSystems}::text[], ${v.origins}::text[], ${v.eventTypes}::text[], ${v.objectIds}::text[], ${v.objectTypes}::text[], ${v.metadata}::jsonb[], ${v.data}::jsonb[], ${v.contexts}::text[], ${v.contentHashes}::text[])
    WITH ORDINALITY AS given (id, program_id, merchant_id, created_at, source_system, origin, event_type, object_id, object_type, metadata, data, context, content_hash, position)
  WHERE NOT EXISTS (SELECT 1 FROM events WHERE events.id = given.id)
), objects AS MATERIALIZED (
  SELECT program_id, merchant_key, object_type, object_id, count(*)::int AS n FROM new GROUP BY 1, 2, 3, 4
), reserved AS (
  INSERT INTO object_sequences (program_id, merchant_id, object_type, object_id, last_sequence)
  SELECT program_id, merchant_key, object_type, object_id, n FROM objects ORDER BY 1, 2, 3, 4
  ON CONFLICT (program_id, merchant_id, object_type, object_id) DO UPDATE SET last_sequence = object_sequences.last_sequence + excluded.last_sequence
  RETURNING program_id, merchant_id AS merchant_key, object_type, object_id, last_sequence
), inserted AS (
  -- No conflict target: the arbiter is the month's own unique index on id. Of two ingests of one
  -- id, the second waits at that index for the first to end, holding the ids it inserted before;
  -- inserted in id order, by every ingest, the ids two batches share are waited for in one order,
  -- so no two ingests wait for each other.
  INSERT INTO events (id, program_id, merchant_id, created_at, source_system, origin, event_type, object_id, object_type, sequence, metadata, data, context, content_hash)
  SELECT new.id, new.program_id, new.merchant_id, new.created_at, new.source_system, new.origin, new.event_type, new.object_id, new.object_type,
    r.last_sequence - o.n + row_number() OVER (PARTITION BY new.program_id, new.merchant_key, new.object_type, new.object_id ORDER BY new.position),
    new.metadata, new.data, new.context, new.content_hash
  FROM new
  JOIN objects o USING (program_id, merchant_key, object_type, object_id)
  JOIN reserved r USING (program_id, merchant_key, object_type, object_id)
  ORDER BY new.id
  ON CONFLICT DO NOTHING
  RETURNING id, sequence
)
SELECT inserted.id, inserted.sequence, (SELECT count(*)::int FROM new) AS meant
FROM (SELECT 1) AS one LEFT JOIN inserted ON true`),
);

/** The ingest's statements on the events table, built from their parameters (part of eventQueries). */
export const eventIngestQueries = {
  findTenants: (programIds: readonly string[], merchantIds: readonly string[]) => findTenantsStatement('find-tenants', { programIds, merchantIds }),

  holdIngestMonth: () => holdIngestMonthStatement('hold-ingest-month', {}),

  ingestMonthIsCurrent: () => ingestMonthIsCurrentStatement('ingest-month-is-current', {}),

  takeIngestMonth: () => db.selectNoFrom(sql<void>`pg_advisory_xact_lock(${INGEST_MONTH_LOCK}, ${INGEST_MONTH_LOCK_KEY})`.as('taken')),

  /** Run holding the lock exclusive (takeIngestMonth); a no-op when another ingest advanced it first. */
  advanceIngestMonth: () => db.updateTable('event_ingest_month').set({ month: TRANSACTION_MONTH }),

  /** `batch`'s ids distinct (insertNewEvents keeps an id's first event). */
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
