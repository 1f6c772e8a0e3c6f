import { compareStrings } from '@herald/domain';
import { byShape, db, run, sql, type Sql } from '../sql';

/**
 * Exact event counts per tenant scope and per combination of the spec's filters (origin,
 * objectType), kept in the ingest transaction:
 * - event_counts holds the totals, so GET /events never counts matching rows;
 * - event_bucket_counts holds the same counts per day, minute and second of createdAt, so a deep
 *   page is found by walking a few small rows instead of skipping every earlier event.
 * An empty origin or objectType stands for "any".
 */

/** Bucket widths in seconds, coarsest first: a walk reads at most 365 + 1440 + 60 rows per year of data. */
const BUCKET_GRANULARITIES = [86_400, 60, 1] as const;

/** The counters a stored event adds to. */
export interface CountedEvent {
  programId: string;
  merchantId?: string;
  origin: string;
  objectType: string;
  createdAt: Date;
}

/** Which counters a list query reads: a scope and the spec's filters. */
export interface CountKey {
  scope: string;
  origin?: string;
  objectType?: string;
}

export function programScope(programId: string): string {
  return `program:${programId}`;
}

export function merchantScope(merchantId: string): string {
  return `merchant:${merchantId}`;
}

interface Increment {
  scope: string;
  origin: string;
  objectType: string;
  granularity: number;
  /** Epoch seconds: a double holds them exactly, and is much cheaper than a BigInt per counter. */
  bucketStart: number;
  count: number;
}

/**
 * The one statement that adds the events to every counter they belong to (run it inside the
 * transaction that stores them); null when there are none.
 */
export function countsStatement(events: readonly CountedEvent[]) {
  // The events of a batch mostly share their tenant, filters and second: each such group is
  // counted once, then added to its 8 totals and 24 buckets (not every event to every counter).
  const groups = new Map<string, { event: CountedEvent; seconds: number; count: number }>();
  for (const event of events) {
    const seconds = Math.floor(event.createdAt.getTime() / 1000);
    const key = `${event.programId}\u0000${event.merchantId === undefined ? '-' : `+${event.merchantId}`}\u0000${event.origin}\u0000${event.objectType}\u0000${seconds}`;
    const group = groups.get(key);
    if (group) group.count += 1;
    else groups.set(key, { event, seconds, count: 1 });
  }
  const totals = new Map<string, Omit<Increment, 'granularity' | 'bucketStart'>>();
  const buckets = new Map<string, Increment>();
  for (const { event, seconds, count } of groups.values()) {
    const scopes = event.merchantId ? [programScope(event.programId), merchantScope(event.merchantId)] : [programScope(event.programId)];
    for (const scope of scopes) {
      for (const origin of ['', event.origin]) {
        for (const objectType of ['', event.objectType]) {
          const key = `${scope}\u0000${origin}\u0000${objectType}`;
          const total = totals.get(key) ?? { scope, origin, objectType, count: 0 };
          total.count += count;
          totals.set(key, total);
          for (const granularity of BUCKET_GRANULARITIES) {
            const bucketStart = seconds - (((seconds % granularity) + granularity) % granularity);
            const bucketKey = `${key}\u0000${granularity}\u0000${bucketStart}`;
            const bucket = buckets.get(bucketKey) ?? { scope, origin, objectType, granularity, bucketStart, count: 0 };
            bucket.count += count;
            buckets.set(bucketKey, bucket);
          }
        }
      }
    }
  }
  if (totals.size === 0) return null;
  // Rows are sorted by key, so that concurrent batches lock shared counters in the same order (no deadlock).
  return eventCountQueries.add(sortedValues(totals), sortedValues(buckets));
}

function sortedValues<T>(map: Map<string, T>): T[] {
  return [...map.entries()].sort(([a], [b]) => compareStrings(a, b)).map(([, value]) => value);
}

/**
 * Where the event at `offset` (0-based, in (createdAt, id) order) lies: the page starts at the
 * first event created at or after `fromSecond` (epoch seconds), after skipping `skip` of them.
 * Null when the counters hold no such position (then the caller skips the plain way).
 */
export async function locateOffset(executor: Sql, key: CountKey, offset: number): Promise<{ fromSecond: bigint; skip: number } | null> {
  // A named statement (parsed once per connection); int8 columns come back as strings.
  const { rows } = await run(
    executor,
    eventCountQueries.walk({ scope: key.scope, origin: key.origin ?? '', objectType: key.objectType ?? '', offset: BigInt(offset) }),
    {
      prepared: 'events-walk',
    },
  );
  const [second] = rows;
  return second ? { fromSecond: BigInt(second.bucket_start), skip: Number(BigInt(offset) - BigInt(second.before)) } : null;
}

/** A time's second, and the starts of its second, minute and day, as the bucket counters key them. */
export interface SecondBounds {
  /** Epoch seconds (floored). */
  second: number;
  minute: number;
  day: number;
  /** The start of its second, as a time. */
  secondStart: Date;
}

export function secondBounds(at: Date): SecondBounds {
  const second = Math.floor(at.getTime() / 1000);
  const floorTo = (granularity: number): number => second - (((second % granularity) + granularity) % granularity);
  return { second, minute: floorTo(60), day: floorTo(86_400), secondStart: new Date(second * 1000) };
}

/** Every statement of the counters, built from their parameters (the SQL snapshot compiles each). */
export const eventCountQueries = {
  /**
   * One statement for both tables. Passed as arrays through unnest: a batch spread over time
   * touches thousands of buckets, more rows than PostgreSQL's 65,535 bind parameters allow as VALUES.
   */
  add: (totals: ReadonlyArray<Omit<Increment, 'granularity' | 'bucketStart'>>, buckets: readonly Increment[]) =>
    addStatement('add', {
      totalScopes: totals.map((r) => r.scope),
      totalOrigins: totals.map((r) => r.origin),
      totalObjectTypes: totals.map((r) => r.objectType),
      totalCounts: totals.map((r) => r.count),
      bucketScopes: buckets.map((r) => r.scope),
      bucketOrigins: buckets.map((r) => r.origin),
      bucketObjectTypes: buckets.map((r) => r.objectType),
      bucketGranularities: buckets.map((r) => r.granularity),
      bucketStarts: buckets.map((r) => String(r.bucketStart)),
      bucketCounts: buckets.map((r) => r.count),
    }),

  /**
   * The second that holds the event at `offset` (bucket_start) and how many events come before
   * it (before), found through the day, minute and second buckets in one statement.
   */
  walk: (v: { scope: string; origin: string; objectType: string; offset: bigint }) => walkStatement('walk', { ...v, offset: String(v.offset) }),
};

/** Built and compiled once (byShape): every ingest runs it. */
const addStatement = byShape(
  (
    _shape: 'add',
    v: {
      totalScopes: string[];
      totalOrigins: string[];
      totalObjectTypes: string[];
      totalCounts: number[];
      bucketScopes: string[];
      bucketOrigins: string[];
      bucketObjectTypes: string[];
      bucketGranularities: number[];
      bucketStarts: string[];
      bucketCounts: number[];
    },
  ) =>
    db
      .with('totals', (cte) =>
        cte
          .insertInto('event_counts')
          .columns(['scope', 'origin', 'object_type', 'count'])
          .expression(sql`SELECT * FROM unnest(${v.totalScopes}::text[], ${v.totalOrigins}::text[], ${v.totalObjectTypes}::text[], ${v.totalCounts}::bigint[])`)
          .onConflict((oc) =>
            oc.columns(['scope', 'origin', 'object_type']).doUpdateSet((eb) => ({ count: eb('event_counts.count', '+', eb.ref('excluded.count')) })),
          ),
      )
      .insertInto('event_bucket_counts')
      .columns(['scope', 'origin', 'object_type', 'granularity', 'bucket_start', 'count'])
      .expression(
        sql`SELECT * FROM unnest(${v.bucketScopes}::text[], ${v.bucketOrigins}::text[], ${v.bucketObjectTypes}::text[], ${v.bucketGranularities}::int[], ${v.bucketStarts}::bigint[], ${v.bucketCounts}::bigint[])`,
      )
      .onConflict((oc) =>
        oc
          .columns(['scope', 'origin', 'object_type', 'granularity', 'bucket_start'])
          .doUpdateSet((eb) => ({ count: eb('event_bucket_counts.count', '+', eb.ref('excluded.count')) })),
      ),
);

/**
 * The walk, in one round trip: the day bucket that holds the event at `offset`, then its minute,
 * then its second, each found among the finer buckets of the coarser one, with the number of events
 * before it (its `before`, counted from the first event). One round trip instead of one per
 * granularity: each cost the events-api a statement's work. Built and compiled once (byShape).
 */
const walkStatement = byShape((_shape: 'walk', v: { scope: string; origin: string; objectType: string; offset: string }) => {
  const [day, minute, second] = BUCKET_GRANULARITIES;
  /** Each step's bucket width, by the name of the step that found it. */
  const widthOf = { day, minute };
  /**
   * The first bucket of `granularity` whose events reach past the offset, among those within the
   * bucket found at the coarser step `within` (any bucket from the start), with the events before it.
   */
  const holding = (granularity: number, within: 'start' | keyof typeof widthOf) => {
    const outer = (column: string) => sql.ref(`${within}.${column}`);
    const before = sql<string>`${outer('before')} + w.before`;
    return db
      .selectFrom(sql<{ bucket_start: string; before: string }>`${sql.table(within)}`.as(within))
      .innerJoinLateral(
        db
          .selectFrom('event_bucket_counts')
          .select((eb) => [
            'bucket_start',
            'count',
            sql<string>`(${eb.fn.sum('count').over((over) => over.orderBy('bucket_start'))} - ${eb.ref('count')})::bigint`.as('before'),
          ])
          .where('scope', '=', v.scope)
          .where('origin', '=', v.origin)
          .where('object_type', '=', v.objectType)
          .where('granularity', '=', sql.lit(granularity))
          .$if(within !== 'start', (q) =>
            q
              .where('bucket_start', '>=', sql<string>`${outer('bucket_start')}`)
              .where('bucket_start', '<', sql<string>`${outer('bucket_start')} + ${sql.lit(widthOf[within as keyof typeof widthOf])}`),
          )
          .as('w'),
        (join) => join.onTrue(),
      )
      .select([sql<string>`w.bucket_start`.as('bucket_start'), before.as('before')])
      .where(sql<boolean>`${before} + w.count > ${v.offset}::bigint`)
      .orderBy(sql`w.bucket_start`)
      .limit(sql.lit(1));
  };
  return db
    .with('start', () => db.selectNoFrom(sql<string>`0::bigint`.as('before')))
    .with('day', () => holding(day, 'start'))
    .with('minute', () => holding(minute, 'day'))
    .with('second', () => holding(second, 'minute'))
    .selectFrom('second')
    .select(['bucket_start', 'before']);
});
