import type { Event } from '@herald/domain';
import type { ExpressionBuilder, RawBuilder, Selectable } from 'kysely';
import type { DatabasePool } from '../pool';
import type { DB, Event as EventTable } from '../generated/kysely/schema';
import { allOf, byShape, db, inOrder, inTransaction, run, sql, type Sql } from '../sql';
import type { ApiKeyScope } from './api-keys';
import { locateOffset, merchantScope, programScope, secondBounds, type CountKey, type SecondBounds } from './event-counts';

/** An event ready to store: every Event field (id and createdAt assigned) plus its tenant. */
export interface NewEvent {
  event: Event;
  programId: string;
  merchantId?: string;
  /** SHA-256 of the producer's content: equal content makes a re-post a no-op, different content a conflict. */
  contentHash: string;
}

export interface EventListQuery {
  scope: ApiKeyScope;
  origin?: string;
  objectType?: string;
  eventType?: string;
  objectId?: string;
  createdFrom?: Date;
  createdTo?: Date;
  /** 1-based. */
  page: number;
  pageSize: number;
}

/** The programs and merchants of a batch that exist. */
export interface KnownTenants {
  programIds: ReadonlySet<string>;
  /** Each existing merchant's program. */
  merchantPrograms: ReadonlyMap<string, string>;
}

/** An event as stored, with the hash of the content it was stored with. */
export interface StoredEvent {
  event: Event;
  contentHash: string;
}

function countKey(query: EventListQuery): CountKey {
  return {
    scope: query.scope.kind === 'merchant' ? merchantScope(query.scope.merchantId) : programScope(query.scope.programId),
    ...(query.origin === undefined ? {} : { origin: query.origin }),
    ...(query.objectType === undefined ? {} : { objectType: query.objectType }),
  };
}

export interface EventRepositoryOptions {
  /**
   * From this offset on, a page's start is found through the bucket counters; below it, skipping
   * index entries directly is cheaper. Default 2,000.
   */
  bucketWalkMinOffset?: number;
}

/** The columns of an event (toEvent and eventJson read them), of the events table aliased `e`. */
const EVENT_COLUMNS = [
  'e.id',
  'e.created_at',
  'e.source_system',
  'e.origin',
  'e.event_type',
  'e.object_id',
  'e.object_type',
  'e.metadata',
  'e.data',
  'e.context',
] as const;

/** An events row as the statements selecting EVENT_COLUMNS read it (the schema's types). */
type EventRow = Pick<
  Selectable<EventTable>,
  'id' | 'created_at' | 'source_system' | 'origin' | 'event_type' | 'object_id' | 'object_type' | 'metadata' | 'data' | 'context'
>;

/**
 * The event as the ingest answers it: optional fields that were not set are absent, not null.
 * Built field by field in the Event's order. (GET /events and callbacks send eventJson's text.)
 */
function toEvent(row: EventRow): Event {
  const event: Record<string, unknown> = { id: row.id, createdAt: row.created_at.toISOString() };
  if (row.source_system !== null) event.sourceSystem = row.source_system;
  event.origin = row.origin;
  event.eventType = row.event_type;
  event.objectId = row.object_id;
  event.objectType = row.object_type;
  if (row.metadata !== null) event.metadata = row.metadata;
  if (row.data !== null) event.data = row.data;
  if (row.context !== null) event.context = row.context;
  return event as Event;
}

/**
 * The JSON text of the event in the columns of `alias` (an events row), written by PostgreSQL with
 * what toEvent and JSON.stringify would write: the same fields in the same order, absent when
 * null, createdAt in UTC milliseconds. Inside metadata and data it is PostgreSQL's writing of
 * jsonb: a space after each `:` and `,`, numbers in plain decimal (see eventJsonBytes). NULL when
 * the row is absent (a left join that found none). GET /events sends its pages so and callbacks
 * carry it as their body, byte for byte the same: the rows are never parsed into objects and
 * written back.
 */
export function eventJson(alias: string) {
  const column = (name: string) => sql.ref(`${alias}.${name}`);
  const text = (name: string) => sql`to_json(${column(name)})::text`;
  // `||` with NULL is NULL, and concat skips NULLs: an absent field writes nothing. A JSON null
  // stored in a jsonb column is absent too, as toEvent reads it (pg parses it to null).
  const optional = (field: string, value: RawBuilder<unknown>) => sql`${sql.lit(`,"${field}":`)} || ${value}`;
  const jsonb = (name: string) => sql`nullif(${column(name)}, 'null'::jsonb)::text`;
  return sql<
    string | null
  >`case when ${column('id')} is not null then concat(${sql.lit('{"id":')}, ${text('id')}, ${sql.lit(',"createdAt":"')}, to_char(${column('created_at')} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), '"', ${optional('sourceSystem', text('source_system'))}, ${sql.lit(',"origin":')}, ${text('origin')}, ${sql.lit(',"eventType":')}, ${text('event_type')}, ${sql.lit(',"objectId":')}, ${text('object_id')}, ${sql.lit(',"objectType":')}, ${text('object_type')}, ${optional('metadata', jsonb('metadata'))}, ${optional('data', jsonb('data'))}, ${optional('context', text('context'))}, '}') end`;
}

/**
 * The UTF-8 bytes of eventJson's text of this event, as stored (createdAt in UTC milliseconds):
 * its callback body's size. JSON.stringify's size, plus what PostgreSQL writes more in metadata
 * and data (jsonbExtraBytes).
 */
export function eventJsonBytes(event: Event): number {
  return Buffer.byteLength(JSON.stringify(event), 'utf8') + jsonbExtraBytes(event.metadata) + jsonbExtraBytes(event.data);
}

/**
 * How many more bytes PostgreSQL's text of a jsonb value has than JSON.stringify's: a space after
 * each `:` and `,`, and every number in plain decimal (1e+21 is written with 22 digits, 1e-7 as
 * 0.0000001). Strings are escaped alike.
 */
function jsonbExtraBytes(value: unknown): number {
  if (typeof value === 'number') return plainDecimalLength(value) - String(value).length;
  if (value === null || typeof value !== 'object') return 0;
  const items = Array.isArray(value) ? value : Object.values(value);
  // One space after each `,` between items, and after the `:` of each of an object's keys.
  let extra = Math.max(0, items.length - 1) + (Array.isArray(value) ? 0 : items.length);
  for (const item of items) extra += jsonbExtraBytes(item);
  return extra;
}

/** The length of a number as PostgreSQL's numeric writes it, from JavaScript's shortest form `d[.ddd]e±k`. */
function plainDecimalLength(value: number): number {
  const written = String(value);
  const exponentAt = written.indexOf('e');
  if (exponentAt < 0) return written.length;
  const sign = written.startsWith('-') ? 1 : 0;
  const exponent = Number(written.slice(exponentAt + 1));
  const pointAt = written.indexOf('.');
  const fractionDigits = pointAt < 0 ? 0 : exponentAt - pointAt - 1;
  if (exponent < 0) return sign + '0.'.length + fractionDigits - exponent;
  const remaining = Math.max(0, fractionDigits - exponent);
  return sign + exponent + 1 + (remaining > 0 ? 1 + remaining : 0);
}

/** A page of events as GET /events sends it: the array's JSON text, built by PostgreSQL (eventJson). */
export interface EventListPage {
  count: number;
  /** The page's events as a JSON array, each as eventJson writes it. */
  eventsJson: string;
}

export function eventRepository(pool: DatabasePool, options: EventRepositoryOptions = {}) {
  const bucketWalkMinOffset = options.bucketWalkMinOffset ?? 2_000;
  return {
    /**
     * One page of a tenant's events, oldest first by (createdAt, id), and the exact count of all
     * matching events. Counts for the spec's filters and the createdFrom/createdTo range come from
     * the counters (event_counts, event_bucket_counts); eventType and objectId count over their index.
     */
    async list(query: EventListQuery): Promise<EventListPage> {
      const offset = (query.page - 1) * query.pageSize;
      // A deep page starts from the second the bucket counters point at, so only the events of that
      // second are skipped; a shallow one skips index entries directly. (Past the last event the
      // walk finds no bucket, and the count below leaves the page empty.) Under createdFrom, the
      // walk looks for the position past the events created before it.
      let start: { fromSecond: bigint; skip: number } | null = null;
      if (offset >= bucketWalkMinOffset && usesOnlyCountedFilters(query)) {
        const before = query.createdFrom === undefined ? 0 : await countBefore(pool, query, query.createdFrom);
        start = await locateOffset(pool, countKey(query), before + offset);
      }
      // A named statement: each connection parses it once (a few dozen shapes at most, one per set
      // of filters), then only binds and plans it (measured: a third less PostgreSQL CPU per request).
      const { rows } = await run(pool, eventQueries.page(query, start ? { fromSecond: Number(start.fromSecond), skip: start.skip } : { skip: offset }), {
        prepared: 'events-page',
      });
      const [row] = rows;
      return { count: Number(row?.total ?? 0), eventsJson: row?.events ?? '[]' };
    },
  };
}

/** A JSON column's parameter: the value's JSON text, or SQL NULL when the field is absent. */
function jsonOrNull(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

// The ingest's statements on the events table, run inside the caller's transaction. Each is one
// statement whatever the batch size: rows travel as arrays through unnest (measured: Prisma's
// createMany and per-row work cost the ingest several times what PostgreSQL spends storing rows).

/** Which of these programs and merchants exist, in one round trip. */
export async function findTenants(executor: Sql, programIds: readonly string[], merchantIds: readonly string[]): Promise<KnownTenants> {
  // Programs come back with a null merchant, merchants with their program.
  const { rows } = await run(executor, eventQueries.findTenants(programIds, merchantIds));
  return {
    programIds: new Set(rows.filter((r) => r.merchant_id === null).map((r) => r.program_id)),
    merchantPrograms: new Map(rows.filter((r) => r.merchant_id !== null).map((r) => [r.merchant_id!, r.program_id])),
  };
}

/**
 * Inserts the events whose id is not stored yet, in any month, and leaves the others alone; returns
 * the ids it inserted, and the time they were stored at: their ingested_at, which is also the
 * created_at of the deliveries the same transaction stores (both columns default to its `now()`).
 * Call inside a READ COMMITTED transaction (the ingest's, ingestStore).
 *
 * Events are partitioned by month of ingestion, and PostgreSQL only keeps an id unique within a
 * month (each partition's unique index on id). Across months: the transaction holds the ingest
 * month's advisory lock shared, checks that the month it stores into is the ingest month, and
 * inserts the ids no month holds. Any two ingests in progress therefore store into one month,
 * where its unique index makes the second of one id wait for the first and skip it; an ingest
 * that starts after another committed finds that one's event, whichever month holds it. When the
 * month has turned, this throws IngestMonthTurnedError: the caller rolls back, advances the month
 * (advanceIngestMonth) and runs the transaction again. One advisory lock per transaction, whatever
 * the batch's size.
 */
export async function insertNewEvents(executor: Sql, batch: readonly NewEvent[]): Promise<{ created: Set<string>; storedAt: Date }> {
  // One round trip on a pipelining connection. PostgreSQL runs the statements in order: the check
  // and the insert take their snapshots once the lock is granted, so after any advance of the month.
  const [, month, { rows }] = await inOrder(executor, [
    () => run(executor, eventQueries.holdIngestMonth()),
    () => run(executor, eventQueries.ingestMonthIsCurrent()),
    () => run(executor, eventQueries.insertNew(batch)),
  ]);
  // What was inserted into the new month goes with the rollback.
  const [state] = month.rows;
  if (state?.current !== true) throw new IngestMonthTurnedError();
  return { created: new Set(rows.map((r) => r.id)), storedAt: state.stored_at };
}

/** The month ingests store into has turned: roll back, advanceIngestMonth, and run the ingest again. */
export class IngestMonthTurnedError extends Error {
  constructor() {
    super('the ingest month has turned: advance it and run the ingest again');
    this.name = 'IngestMonthTurnedError';
  }
}

/**
 * Makes the database clock's month the ingest month, in a transaction of its own. It waits for
 * every ingest still storing into the previous month to commit (they hold the lock shared), and
 * ingests starting meanwhile wait for it.
 */
export async function advanceIngestMonth(pool: DatabasePool): Promise<void> {
  await inTransaction(pool, async (executor) => {
    await run(executor, eventQueries.takeIngestMonth());
    await run(executor, eventQueries.advanceIngestMonth());
  });
}

/** The stored events with these ids, by id. */
export async function loadStoredEvents(executor: Sql, eventIds: readonly string[]): Promise<Map<string, StoredEvent>> {
  if (eventIds.length === 0) return new Map();
  const { rows } = await run(executor, eventQueries.loadStored(eventIds));
  return new Map(rows.map((row) => [row.id, { event: toEvent(row), contentHash: row.content_hash }]));
}

/** The exact number of the query's tenant's events (with its origin and objectType) created before `at`. */
async function countBefore(pool: Sql, query: EventListQuery, at: Date): Promise<number> {
  const { rows } = await run(pool, eventQueries.countBefore(query, at), { prepared: 'events-before' });
  return Number(rows[0]?.before ?? 0);
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
      'metadata',
      'data',
      'context',
      'content_hash',
    ])
    .expression(
      sql`SELECT * FROM unnest(${v.ids}::text[], ${v.programIds}::text[], ${v.merchantIds}::text[], ${v.createdAts}::timestamptz[], ${v.sourceSystems}::text[], ${v.origins}::text[], ${v.eventTypes}::text[], ${v.objectIds}::text[], ${v.objectTypes}::text[], ${v.metadata}::jsonb[], ${v.data}::jsonb[], ${v.contexts}::text[], ${v.contentHashes}::text[]) AS new (id) WHERE NOT EXISTS (SELECT 1 FROM events WHERE events.id = new.id) ORDER BY new.id`,
    )
    // No conflict target: the arbiter is the month's own unique index on id, which also skips an
    // id given twice in one batch. Of two ingests of one id, the second waits at that index for
    // the first to end, holding the ids it inserted before; inserted in id order, by every ingest,
    // the ids two batches share are waited for in one order, so no two ingests wait for each other.
    .onConflict((oc) => oc.doNothing())
    .returning('id'),
);

/** Where a page starts: after skipping `skip` events, from `fromSecond` (epoch seconds) when the bucket walk found it. */
type PageStart = { skip: number; fromSecond?: number };

/** Every statement on the events table, built from its parameters (the SQL snapshot compiles each). */
export const eventQueries = {
  findTenants: (programIds: readonly string[], merchantIds: readonly string[]) => findTenantsStatement('find-tenants', { programIds, merchantIds }),

  holdIngestMonth: () => holdIngestMonthStatement('hold-ingest-month', {}),

  ingestMonthIsCurrent: () => ingestMonthIsCurrentStatement('ingest-month-is-current', {}),

  takeIngestMonth: () => db.selectNoFrom(sql<void>`pg_advisory_xact_lock(${INGEST_MONTH_LOCK}, ${INGEST_MONTH_LOCK_KEY})`.as('taken')),

  /** Run holding the lock exclusive (takeIngestMonth); a no-op when another ingest advanced it first. */
  advanceIngestMonth: () => db.updateTable('event_ingest_month').set({ month: TRANSACTION_MONTH }),

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

  page: (query: EventListQuery, start: PageStart) => pageStatement(pageShape(query, start), pageValues(query, start)),

  countBefore: (query: EventListQuery, at: Date) => {
    const v = pageValues({ ...query, createdFrom: at, createdTo: undefined }, { skip: 0 });
    return countBeforeStatement(
      { merchant: query.scope.kind === 'merchant', origin: query.origin !== undefined, objectType: query.objectType !== undefined },
      v,
    );
  },
};

/** What decides the text of a page statement: the tenant's kind, which filters are set, and where the page starts. */
type PageShape = {
  merchant: boolean;
  /** The count comes from event_counts (only the spec's filters are set). */
  counted: boolean;
  filters: Array<'origin' | 'objectType' | 'eventType' | 'objectId' | 'createdFrom' | 'createdTo'>;
  /** The page starts from the second the bucket walk found. */
  from: boolean;
  /** Index entries skipped before the page: without any, the statement has no OFFSET. */
  skips: boolean;
  /** The page's ids are read with this constant LIMIT (pageLimitStep), the page itself then cut to pageSize. */
  limitStep: number;
};

/**
 * The constant LIMITs a page's ids are read with: the smallest step at least the pageSize. With a
 * LIMIT (or OFFSET) parameter PostgreSQL estimates a tenth of the index, finds its generic plan
 * worse than one planned for the values, and so plans every execution afresh; with a constant it
 * reuses the generic plan of the prepared statement. Measured on page 1 over 1,000,000 events: the
 * statement's round trip took half the time. Steps rather than every pageSize keep the statements
 * each connection prepares few (4 per set of filters).
 */
const PAGE_LIMIT_STEPS = [10, 20, 50, 100] as const;

function pageLimitStep(pageSize: number): number {
  return PAGE_LIMIT_STEPS.find((step) => step >= pageSize) ?? pageSize;
}

/** The parameters of a page statement, each used as it is. */
type PageValues = {
  /** createdFrom's second, the starts of its minute and day (epoch seconds) and of its second, for the counters. */
  createdFromSecond: number | undefined;
  createdFromMinute: number | undefined;
  createdFromDay: number | undefined;
  createdFromSecondStart: Date | undefined;
  /** The same of createdTo. */
  createdToSecond: number | undefined;
  createdToMinute: number | undefined;
  createdToDay: number | undefined;
  createdToSecondStart: Date | undefined;
  tenantId: string;
  countScope: string;
  countOrigin: string;
  countObjectType: string;
  /** The page exists only if more events than this match. */
  offset: string;
  origin: string | undefined;
  objectType: string | undefined;
  eventType: string | undefined;
  objectId: string | undefined;
  createdFrom: Date | undefined;
  createdTo: Date | undefined;
  fromSecond: number | undefined;
  skip: number;
  limit: number;
};

const FILTERS = ['origin', 'objectType', 'eventType', 'objectId', 'createdFrom', 'createdTo'] as const;

function pageShape(query: EventListQuery, start: PageStart): PageShape {
  return {
    merchant: query.scope.kind === 'merchant',
    counted: usesOnlyCountedFilters(query),
    filters: FILTERS.filter((name) => query[name] !== undefined),
    from: start.fromSecond !== undefined,
    skips: start.skip > 0,
    limitStep: pageLimitStep(query.pageSize),
  };
}

// Plain fields, no spread objects: built on every GET /events (measured among its costliest lines).
function pageValues(query: EventListQuery, start: PageStart): PageValues {
  const key = countKey(query);
  const from: SecondBounds | undefined = query.createdFrom === undefined ? undefined : secondBounds(query.createdFrom);
  const to: SecondBounds | undefined = query.createdTo === undefined ? undefined : secondBounds(query.createdTo);
  return {
    createdFromSecond: from?.second,
    createdFromMinute: from?.minute,
    createdFromDay: from?.day,
    createdFromSecondStart: from?.secondStart,
    createdToSecond: to?.second,
    createdToMinute: to?.minute,
    createdToDay: to?.day,
    createdToSecondStart: to?.secondStart,
    tenantId: query.scope.kind === 'merchant' ? query.scope.merchantId : query.scope.programId,
    countScope: key.scope,
    countOrigin: key.origin ?? '',
    countObjectType: key.objectType ?? '',
    offset: String((query.page - 1) * query.pageSize),
    origin: query.origin,
    objectType: query.objectType,
    eventType: query.eventType,
    objectId: query.objectId,
    createdFrom: query.createdFrom,
    createdTo: query.createdTo,
    fromSecond: start.fromSecond,
    skip: start.skip,
    limit: query.pageSize,
  };
}

/**
 * One round trip for the count and the page's JSON. The count is computed once (MATERIALIZED); the page
 * is read only when the count says it exists (a one-time filter), and through a deferred join: the
 * page's keys (id, ingestedAt) are found on the narrow index first, then only those rows are read,
 * each from its own month's partition. Built once per
 * shape: GET /events runs it on every request.
 */
const pageStatement = byShape((shape: PageShape, v: PageValues) =>
  db
    .with(
      (cte) => cte('c').materialized(),
      (qc) => qc.selectNoFrom(countOf(shape, v).as('total')),
    )
    .selectFrom('c')
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom((sub) =>
            sub
              .selectFrom('events')
              .select(['id', 'created_at', 'ingested_at'])
              // From the walk's second, the createdFrom bound is already in its position.
              .where((w) => w.and([w('c.total', '>', v.offset), matching(w, shape, v, { createdFrom: !shape.from })]))
              .$if(shape.from, (q) => q.where('created_at', '>=', sql<Date>`to_timestamp(${v.fromSecond})`))
              .orderBy('created_at')
              .orderBy('id')
              .$if(shape.skips, (q) => q.offset(v.skip))
              .limit(sql.lit(shape.limitStep))
              .as('page'),
          )
          // On the whole primary key: each row is read from its own month's partition only.
          .innerJoin('events as e', (join) => join.onRef('e.id', '=', 'page.id').onRef('e.ingested_at', '=', 'page.ingested_at'))
          .select(EVENT_COLUMNS)
          .orderBy('e.created_at')
          .orderBy('e.id')
          .limit(v.limit)
          .as('p'),
      (join) => join.onTrue(),
    )
    // The page as one JSON array: `[]` when empty (string_agg skips the left join's row of nulls).
    .select(['c.total', sql<string>`concat('[', string_agg(${eventJson('p')}, ',' order by ${sql.ref('p.created_at')}, ${sql.ref('p.id')}), ']')`.as('events')])
    .groupBy('c.total'),
);

/**
 * The exact count of the query's events: from event_counts for the spec's filters, from the bucket
 * counters under createdFrom/createdTo (the events before createdTo less those before createdFrom),
 * else over their index.
 */
function countOf(shape: PageShape, v: PageValues) {
  const set = new Set(shape.filters);
  if (shape.counted && (set.has('createdFrom') || set.has('createdTo'))) {
    const scope = { merchant: shape.merchant, origin: set.has('origin'), objectType: set.has('objectType') };
    const upTo = set.has('createdTo') ? beforeBound(scope, v, 'createdTo') : sql<string>`coalesce((${totalCounter(v)}), 0)`;
    const from = set.has('createdFrom') ? beforeBound(scope, v, 'createdFrom') : sql<string>`0`;
    // An empty range (createdFrom after createdTo) counts nothing, not a negative number.
    return sql<string>`greatest(${upTo} - ${from}, 0)`;
  }
  if (shape.counted) return sql<string>`coalesce((${totalCounter(v)}), 0)`;
  return sql<string>`(${db
    .selectFrom('events')
    .select((eb) => eb.fn.countAll().as('count'))
    .where((eb) => matching(eb, shape, v))})`;
}

/** The total of the query's counter in event_counts. */
function totalCounter(v: Pick<PageValues, 'countScope' | 'countOrigin' | 'countObjectType'>) {
  return db
    .selectFrom('event_counts')
    .select('count')
    .where('scope', '=', v.countScope)
    .where('origin', '=', v.countOrigin)
    .where('object_type', '=', v.countObjectType);
}

/** Which tenant column and which of the spec's filters a count before a time reads. */
type BeforeShape = { merchant: boolean; origin: boolean; objectType: boolean };

/**
 * The events of the query's counter created before `at`: the day buckets before its day, the
 * minute buckets of its day before its minute, the second buckets of its minute before its second
 * (at most 365 + 1,440 + 60 small rows a year), then the events of its own second before it, on
 * the index.
 */
function beforeBound(shape: BeforeShape, v: PageValues, bound: 'createdFrom' | 'createdTo') {
  const [at, second, minute, day, secondStart] =
    bound === 'createdFrom'
      ? [v.createdFrom, v.createdFromSecond, v.createdFromMinute, v.createdFromDay, v.createdFromSecondStart]
      : [v.createdTo, v.createdToSecond, v.createdToMinute, v.createdToDay, v.createdToSecondStart];
  const buckets = (granularity: number, lower: number | undefined, upper: number) =>
    db
      .selectFrom('event_bucket_counts')
      .select((eb) => sql<string>`coalesce(sum(${eb.ref('count')}), 0)`.as('n'))
      .where('scope', '=', v.countScope)
      .where('origin', '=', v.countOrigin)
      .where('object_type', '=', v.countObjectType)
      .where('granularity', '=', sql.lit(granularity))
      .$if(lower !== undefined, (q) => q.where('bucket_start', '>=', sql<string>`${lower}`))
      .where('bucket_start', '<', sql<string>`${upper}`);
  const ownSecond = db
    .selectFrom('events')
    .select((eb) => eb.fn.countAll().as('n'))
    .where((eb) =>
      allOf(eb, [
        shape.merchant ? eb('events.merchant_id', '=', v.tenantId) : eb('events.program_id', '=', v.tenantId),
        shape.origin && eb('events.origin', '=', v.origin!),
        shape.objectType && eb('events.object_type', '=', v.objectType!),
        eb('events.created_at', '>=', secondStart!),
        eb('events.created_at', '<', at!),
      ]),
    );
  return sql<string>`((${buckets(86_400, undefined, day!)}) + (${buckets(60, day, minute!)}) + (${buckets(1, minute, second!)}) + (${ownSecond}))`;
}

/** Built once per shape: a deep page under createdFrom counts the events before it first. */
const countBeforeStatement = byShape((shape: BeforeShape, v: PageValues) => db.selectNoFrom(beforeBound(shape, v, 'createdFrom').as('before')));

/** The list query's filters on the events table; `createdFrom: false` leaves that one out. */
function matching(eb: ExpressionBuilder<DB, 'events'>, shape: PageShape, v: PageValues, include: { createdFrom: boolean } = { createdFrom: true }) {
  const set = new Set(shape.filters);
  return allOf(eb, [
    shape.merchant ? eb('events.merchant_id', '=', v.tenantId) : eb('events.program_id', '=', v.tenantId),
    set.has('origin') && eb('events.origin', '=', v.origin!),
    set.has('objectType') && eb('events.object_type', '=', v.objectType!),
    set.has('eventType') && eb('events.event_type', '=', v.eventType!),
    set.has('objectId') && eb('events.object_id', '=', v.objectId!),
    include.createdFrom && set.has('createdFrom') && eb('events.created_at', '>=', v.createdFrom!),
    set.has('createdTo') && eb('events.created_at', '<', v.createdTo!),
  ]);
}

/**
 * Whether the query's deep pages are found through the bucket counters (only the spec's filters
 * are set): then a page costs the same at any depth. Otherwise a page skips every event before it.
 */
export function pagesFoundThroughCounters(query: Omit<EventListQuery, 'scope' | 'page' | 'pageSize'>): boolean {
  return usesOnlyCountedFilters(query);
}

function usesOnlyCountedFilters(query: Omit<EventListQuery, 'scope' | 'page' | 'pageSize'>): boolean {
  return query.eventType === undefined && query.objectId === undefined;
}

export type EventRepository = ReturnType<typeof eventRepository>;
