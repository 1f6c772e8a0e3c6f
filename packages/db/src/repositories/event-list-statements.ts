import type { ExpressionBuilder } from 'kysely';
import type { DB } from '../generated/kysely/schema';
import { allOf, byShape, db, sql } from '../sql';
import type { ApiKeyScope } from './api-keys';
import { merchantScope, programScope, secondBounds, type CountKey, type SecondBounds } from './event-counts';
import { EVENT_COLUMNS, eventJson } from './event-json';

// GET /events' statements: one page of a tenant's events with their exact count, and the count
// before a time that a deep page under createdFrom starts from.

export interface EventListQuery {
  scope: ApiKeyScope;
  origin?: string;
  objectType?: string;
  eventType?: string;
  objectId?: string;
  createdFrom?: Date;
  createdTo?: Date;
  /**
   * Only the events of one object (objectType and objectId set) whose sequence is greater, listed
   * in sequence order instead of (createdAt, id): the gap fill of a merchant that missed a callback.
   */
  afterSequence?: number;
  /** 1-based. */
  page: number;
  pageSize: number;
}

export function countKey(query: EventListQuery): CountKey {
  return {
    scope: query.scope.kind === 'merchant' ? merchantScope(query.scope.merchantId) : programScope(query.scope.programId),
    ...(query.origin === undefined ? {} : { origin: query.origin }),
    ...(query.objectType === undefined ? {} : { objectType: query.objectType }),
  };
}

/** Where a page starts: after skipping `skip` events, from `fromSecond` (epoch seconds) when the bucket walk found it. */
type PageStart = { skip: number; fromSecond?: number };

/** GET /events' statements, built from their parameters (part of eventQueries). */
export const eventListQueries = {
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
  filters: Array<'origin' | 'objectType' | 'eventType' | 'objectId' | 'createdFrom' | 'createdTo' | 'afterSequence'>;
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
  afterSequence: number | undefined;
  fromSecond: number | undefined;
  skip: number;
  limit: number;
};

const FILTERS = ['origin', 'objectType', 'eventType', 'objectId', 'createdFrom', 'createdTo', 'afterSequence'] as const;

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
    afterSequence: query.afterSequence,
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
              .orderBy(inSequence(shape) ? 'sequence' : 'created_at')
              .orderBy('id')
              .$if(shape.skips, (q) => q.offset(v.skip))
              .limit(sql.lit(shape.limitStep))
              .as('page'),
          )
          // On the whole primary key: each row is read from its own month's partition only.
          .innerJoin('events as e', (join) => join.onRef('e.id', '=', 'page.id').onRef('e.ingested_at', '=', 'page.ingested_at'))
          .select(EVENT_COLUMNS)
          .orderBy(inSequence(shape) ? 'e.sequence' : 'e.created_at')
          .orderBy('e.id')
          .limit(v.limit)
          .as('p'),
      (join) => join.onTrue(),
    )
    // The page as one JSON array: `[]` when empty (string_agg skips the left join's row of nulls).
    .select([
      'c.total',
      sql<string>`concat('[', string_agg(${eventJson('p')}, ',' order by ${sql.ref(inSequence(shape) ? 'p.sequence' : 'p.created_at')}, ${sql.ref('p.id')}), ']')`.as(
        'events',
      ),
    ])
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
    set.has('afterSequence') && eb('events.sequence', '>', v.afterSequence!),
  ]);
}

/** An object's events after a sequence number are listed in sequence order; every other list by (createdAt, id). */
function inSequence(shape: PageShape): boolean {
  return shape.filters.includes('afterSequence');
}

/** Whether the query sets only the filters the counters count (the spec's): see pagesFoundThroughCounters. */
export function usesOnlyCountedFilters(query: Omit<EventListQuery, 'scope' | 'page' | 'pageSize'>): boolean {
  return query.eventType === undefined && query.objectId === undefined && query.afterSequence === undefined;
}
