import type pg from 'pg';
import { quoteIdentifier } from './database';
import { merchantScope, programScope } from './repositories/event-counts';

/**
 * Monthly partitions of events, and their retention (the delivery-worker's partition maintenance
 * runs these in each pass, see partitions.ts).
 *
 * Events are partitioned by RANGE over ingested_at (when Herald stored the event, by the database's
 * clock; producers' created_at can be anything), one partition per month, the 1st 00:00 UTC to the
 * next 1st, named `events_p<YYYYMMDD of the 1st>` (migration 20261126000000_partition_events
 * created the first ones the same way). Each partition has its own unique index on id,
 * `<partition>_id_key`: with the ingest month that every ingest in progress shares, it keeps event
 * ids unique across months (see insertNewEvents).
 *
 * Why months: GET /events finds a page on each partition's index and merges them, and an ingest
 * looks each id up in every partition, so fewer partitions cost less on the hot paths; events are
 * kept long (EVENT_RETENTION_DAYS defaults to for ever), so a month kept up to 31 days past the
 * retention period matters little.
 *
 * Retention drops a month whose every event was ingested more than EVENT_RETENTION_DAYS ago, in one
 * transaction that also takes its events out of the list counters (event_counts,
 * event_bucket_counts), so the exact count of GET /events stays exact. A month is kept, whole,
 * while one of its events has a pending delivery, so the worker never loses the event it is
 * delivering. Events are never deleted one by one.
 */

const DAY_MS = 86_400_000;
/** Months created ahead of the current one, by default. */
export const DEFAULT_MONTHS_AHEAD = 3;

/** 00:00 UTC on the 1st of the month of `at`. */
export function monthStart(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
}

function nextMonth(month: Date, n = 1): Date {
  return new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + n, 1));
}

/** The events partition holding the month that starts at `month`. */
export function eventPartitionName(month: Date): string {
  return `events_p${month.toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/** The month a partition name stands for, or null for a name this module did not give. */
function monthOf(name: string): Date | null {
  const match = /^events_p(\d{4})(\d{2})01$/.exec(name);
  return match ? new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, 1)) : null;
}

const monthLabel = (month: Date) => month.toISOString().slice(0, 7);

/** A month of events dropped, with the events it held. */
export interface DroppedMonth {
  /** YYYY-MM (UTC). */
  month: string;
  events: number;
}

/** A month past retention kept because some of its events still have a pending delivery. */
export interface HeldMonth {
  month: string;
  pending: number;
}

/** The months attached to events, oldest first. */
async function eventMonths(client: pg.ClientBase): Promise<Date[]> {
  const { rows } = await client.query<{ name: string }>(
    "SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'public.events'::regclass",
  );
  return rows.flatMap((row) => monthOf(row.name) ?? []).sort((a, b) => a.getTime() - b.getTime());
}

/** Creates the months from the current one to `monthsAhead` ahead, where missing; returns the partitions created. */
export async function createEventMonthsAhead(client: pg.ClientBase, options: { now: Date; monthsAhead: number; lockTimeoutMs: number }): Promise<string[]> {
  const existing = new Set((await eventMonths(client)).map((month) => month.getTime()));
  const created: string[] = [];
  for (let n = 0; n <= options.monthsAhead; n += 1) {
    const month = nextMonth(monthStart(options.now), n);
    if (existing.has(month.getTime())) continue;
    const name = eventPartitionName(month);
    await inTransaction(client, options.lockTimeoutMs, async () => {
      await client.query(
        `CREATE TABLE ${quoteIdentifier(name)} PARTITION OF "events" FOR VALUES FROM ('${month.toISOString()}') TO ('${nextMonth(month).toISOString()}')`,
      );
      await client.query(`CREATE UNIQUE INDEX ${quoteIdentifier(`${name}_id_key`)} ON ${quoteIdentifier(name)} ("id")`);
    });
    created.push(name);
  }
  return created;
}

/** Drops each month that ended more than `retentionDays` ago, except those holding an event with a pending delivery. */
export async function dropEventMonthsPastRetention(
  client: pg.ClientBase,
  options: { now: Date; retentionDays: number; lockTimeoutMs: number },
): Promise<{ dropped: DroppedMonth[]; held: HeldMonth[] }> {
  const cutoff = options.now.getTime() - options.retentionDays * DAY_MS;
  const dropped: DroppedMonth[] = [];
  const held: HeldMonth[] = [];
  for (const month of await eventMonths(client)) {
    if (nextMonth(month).getTime() > cutoff) continue;
    const partition = quoteIdentifier(eventPartitionName(month));
    // A first look without locks: a month held by a pending delivery costs no lock and no count.
    const pending = await pendingDeliveries(client, partition);
    if (pending > 0) {
      held.push({ month: monthLabel(month), pending });
      continue;
    }
    const outcome = await dropMonth(client, partition, options.lockTimeoutMs);
    if ('pending' in outcome) held.push({ month: monthLabel(month), pending: outcome.pending });
    else dropped.push({ month: monthLabel(month), events: outcome.events });
  }
  return { dropped, held };
}

/** How many pending deliveries are of the partition's events (the pending ones are few: their index narrows the scan). */
async function pendingDeliveries(client: pg.ClientBase, partition: string): Promise<number> {
  const { rows } = await client.query<{ pending: string }>(
    `SELECT count(*) AS pending FROM "deliveries" d WHERE d.status = 'pending' AND EXISTS (SELECT 1 FROM ${partition} e WHERE e.id = d.event_id)`,
  );
  return Number(rows[0]!.pending);
}

/**
 * Drops the month and takes its events out of the counters, in one transaction (readers see the
 * counts and the month change together, at its commit):
 * 1. with the partition locked against writes (none come: its month is past), sums what its events
 *    add to each counter, in the shape countsStatement gives them (totals, and day, minute and second
 *    buckets of created_at, per scope and per origin/objectType combination);
 * 2. subtracts the sums from the buckets and deletes the buckets left at zero. This is the long
 *    part (a row per second of created_at, scope and filter combination), and it blocks nothing:
 *    the buckets of a past month are only touched by an ingest of an event created back then (if
 *    one is, the two wait for each other at step 3 and PostgreSQL's deadlock check or the lock
 *    timeout ends one of them: an ingest error the producer retries, or a drop the next pass redoes);
 * 3. locks events exclusively (GET /events and the ingest wait from here to the commit) and checks
 *    again that no event of the month has a pending delivery: a replay reads its deliveries' events
 *    (lockForReplay joins events) in the transaction that sets them back to pending, so none can
 *    slip in between this check and the drop. If one has, everything is rolled back;
 * 4. subtracts the sums from the totals (a row per scope and filter combination: every ingest of the
 *    tenant updates them, hence under the lock) and drops the partition.
 */
async function dropMonth(client: pg.ClientBase, partition: string, lockTimeoutMs: number): Promise<{ events: number } | { pending: number }> {
  await client.query('BEGIN');
  try {
    // A month of a busy platform is a large table to sum: not under the pool's statement timeout.
    await client.query('SET LOCAL statement_timeout = 0');
    await client.query(`SET LOCAL lock_timeout = ${Math.round(lockTimeoutMs)}`);
    await client.query(`LOCK TABLE ${partition} IN SHARE MODE`);
    // Granularity 0 stands for the totals of event_counts.
    await client.query(
      `CREATE TEMPORARY TABLE dropped_counts ON COMMIT DROP AS
       SELECT s.scope, o.origin, t.object_type, g.granularity,
              CASE WHEN g.granularity = 0 THEN 0 ELSE (floor(extract(epoch FROM e.created_at) / g.granularity) * g.granularity)::bigint END AS bucket_start,
              count(*) AS count
       FROM ${partition} e
       CROSS JOIN LATERAL (VALUES ($1 || e.program_id), ($2 || e.merchant_id)) AS s(scope)
       CROSS JOIN LATERAL (VALUES (''), (e.origin)) AS o(origin)
       CROSS JOIN LATERAL (VALUES (''), (e.object_type)) AS t(object_type)
       CROSS JOIN (VALUES (0), (86400), (60), (1)) AS g(granularity)
       WHERE s.scope IS NOT NULL
       GROUP BY 1, 2, 3, 4, 5`,
      [programScope(''), merchantScope('')],
    );
    const { rows: counted } = await client.query<{ events: string }>(`SELECT count(*) AS events FROM ${partition}`);
    const sameBucket = `c.scope = d.scope AND c.origin = d.origin AND c.object_type = d.object_type AND c.granularity = d.granularity AND c.bucket_start = d.bucket_start`;
    await client.query(`UPDATE "event_bucket_counts" c SET count = c.count - d.count FROM dropped_counts d WHERE d.granularity > 0 AND ${sameBucket}`);
    await client.query(`DELETE FROM "event_bucket_counts" c USING dropped_counts d WHERE c.count = 0 AND d.granularity > 0 AND ${sameBucket}`);

    await client.query('LOCK TABLE "events" IN ACCESS EXCLUSIVE MODE');
    const pending = await pendingDeliveries(client, partition);
    if (pending > 0) {
      await client.query('ROLLBACK');
      return { pending };
    }
    await client.query(
      `UPDATE "event_counts" c SET count = c.count - d.count FROM dropped_counts d
       WHERE d.granularity = 0 AND c.scope = d.scope AND c.origin = d.origin AND c.object_type = d.object_type`,
    );
    await client.query(`DROP TABLE ${partition}`);
    await client.query('COMMIT');
    return { events: Number(counted[0]!.events) };
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}

/** Runs `work` in a transaction whose lock waits give up after `lockTimeoutMs`. */
async function inTransaction<T>(client: pg.ClientBase, lockTimeoutMs: number, work: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    await client.query(`SET LOCAL lock_timeout = ${Math.round(lockTimeoutMs)}`);
    const result = await work();
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}
