import { sql } from './sql';

/**
 * The time range within which some deliveries were stored (their created_at, which is also their
 * events' ingested_at: one ingest transaction writes both). Statements that look deliveries up by
 * id name no partition; within this range PostgreSQL reads only the weeks of deliveries (and the
 * months of events) that can hold them, decided once per execution of a generic plan, instead of
 * every partition kept. Unbounded (null) when a time is unknown.
 */
export interface StoredRange {
  from: Date | null;
  to: Date | null;
}

export const EVERY_PARTITION: StoredRange = { from: null, to: null };

/** The range of these times; every partition when any is unknown. */
export function storedRange(times: Iterable<Date | undefined>): StoredRange {
  let from: Date | null = null;
  let to: Date | null = null;
  for (const at of times) {
    if (at === undefined) return EVERY_PARTITION;
    if (from === null || at < from) from = at;
    if (to === null || at > to) to = at;
  }
  return { from, to };
}

/** `column` within `range` (a statement's values: byShape's stand-ins too): a condition PostgreSQL prunes partitions by. */
export const storedWithin = (column: 'd.created_at' | 'deliveries.created_at' | 'events.ingested_at', range: StoredRange) =>
  sql<boolean>`${sql.ref(column)} BETWEEN coalesce(${range.from}::timestamptz, '-infinity') AND coalesce(${range.to}::timestamptz, 'infinity')`;
