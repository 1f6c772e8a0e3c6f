import { compareStrings } from '@herald/domain';
import type { Sql } from '../sql';

/**
 * Exact event counts per tenant scope and per combination of the spec's filters (origin,
 * objectType), kept in the ingest transaction:
 * - event_counts holds the totals, so GET /events never counts matching rows;
 * - event_bucket_counts holds the same counts per day, minute and second of createdAt, so a deep
 *   page is found by walking a few small rows instead of skipping every earlier event.
 * An empty origin or objectType stands for "any".
 */

/** Bucket widths in seconds, coarsest first: a walk reads at most 365 + 1440 + 60 rows per year of data. */
export const BUCKET_GRANULARITIES = [86_400, 60, 1] as const;

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

/** Adds the events to every counter they belong to (call inside the transaction that stores them). */
export async function addToCounts(sql: Sql, events: readonly CountedEvent[]): Promise<void> {
  const totals = new Map<string, Omit<Increment, 'granularity' | 'bucketStart'>>();
  const buckets = new Map<string, Increment>();
  for (const event of events) {
    const seconds = Math.floor(event.createdAt.getTime() / 1000);
    const scopes = event.merchantId ? [programScope(event.programId), merchantScope(event.merchantId)] : [programScope(event.programId)];
    for (const scope of scopes) {
      for (const origin of ['', event.origin]) {
        for (const objectType of ['', event.objectType]) {
          const key = `${scope}\u0000${origin}\u0000${objectType}`;
          const total = totals.get(key) ?? { scope, origin, objectType, count: 0 };
          total.count += 1;
          totals.set(key, total);
          for (const granularity of BUCKET_GRANULARITIES) {
            const bucketStart = seconds - (((seconds % granularity) + granularity) % granularity);
            const bucketKey = `${key}\u0000${granularity}\u0000${bucketStart}`;
            const bucket = buckets.get(bucketKey) ?? { scope, origin, objectType, granularity, bucketStart, count: 0 };
            bucket.count += 1;
            buckets.set(bucketKey, bucket);
          }
        }
      }
    }
  }
  if (totals.size === 0) return;
  // One statement for both tables. Rows are sorted by key, so that concurrent batches lock shared
  // counters in the same order (no deadlock). Passed as arrays: a batch spread over time touches
  // thousands of buckets, more rows than PostgreSQL's 65,535 bind parameters allow as VALUES.
  const total = sortedValues(totals);
  const bucket = sortedValues(buckets);
  await sql.query(
    `WITH totals AS (
       INSERT INTO event_counts (scope, origin, object_type, count)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
       ON CONFLICT (scope, origin, object_type) DO UPDATE SET count = event_counts.count + EXCLUDED.count
     )
     INSERT INTO event_bucket_counts (scope, origin, object_type, granularity, bucket_start, count)
     SELECT * FROM unnest($5::text[], $6::text[], $7::text[], $8::int[], $9::bigint[], $10::bigint[])
     ON CONFLICT (scope, origin, object_type, granularity, bucket_start) DO UPDATE SET count = event_bucket_counts.count + EXCLUDED.count`,
    [
      total.map((r) => r.scope),
      total.map((r) => r.origin),
      total.map((r) => r.objectType),
      total.map((r) => r.count),
      bucket.map((r) => r.scope),
      bucket.map((r) => r.origin),
      bucket.map((r) => r.objectType),
      bucket.map((r) => r.granularity),
      bucket.map((r) => String(r.bucketStart)),
      bucket.map((r) => r.count),
    ],
  );
}

function sortedValues<T>(map: Map<string, T>): T[] {
  return [...map.entries()].sort(([a], [b]) => compareStrings(a, b)).map(([, value]) => value);
}

/**
 * Where the event at `offset` (0-based, in (createdAt, id) order) lies: the page starts at the
 * first event created at or after `fromSecond` (epoch seconds), after skipping `skip` of them.
 * Null when the counters hold no such position (then the caller skips the plain way).
 */
export async function locateOffset(sql: Sql, key: CountKey, offset: number): Promise<{ fromSecond: bigint; skip: number } | null> {
  let remaining = BigInt(offset);
  let from: bigint | null = null;
  let to: bigint | null = null;
  for (const granularity of BUCKET_GRANULARITIES) {
    // Named statements (parsed once per connection); int8 columns come back as strings.
    const params = [key.scope, key.origin ?? '', key.objectType ?? '', granularity, String(remaining)];
    const { rows } = await sql.query<{ bucket_start: string; before: string }>(
      from === null
        ? { name: 'events-walk', text: walkSql(''), values: params }
        : { name: 'events-walk-within', text: walkSql('AND bucket_start >= $6 AND bucket_start < $7'), values: [...params, String(from), String(to)] },
    );
    const bucket = rows[0];
    if (!bucket) return null;
    remaining -= BigInt(bucket.before);
    from = BigInt(bucket.bucket_start);
    to = from + BigInt(granularity);
  }
  return from === null ? null : { fromSecond: from, skip: Number(remaining) };
}

/** The walk's step at one granularity: the first bucket whose running total passes the offset ($5). */
function walkSql(within: string): string {
  return `SELECT bucket_start, before FROM (
            SELECT bucket_start, count, (sum(count) OVER (ORDER BY bucket_start) - count)::bigint AS before
            FROM event_bucket_counts
            WHERE scope = $1 AND origin = $2 AND object_type = $3 AND granularity = $4 ${within}
          ) walk
          WHERE before + count > $5
          ORDER BY bucket_start
          LIMIT 1`;
}
