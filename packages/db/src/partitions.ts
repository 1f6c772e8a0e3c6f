import type pg from 'pg';
import type { DatabasePool } from './pool';
import { quoteIdentifier } from './database';
import { createEventMonthsAhead, DEFAULT_MONTHS_AHEAD, dropEventMonthsPastRetention, type DroppedMonth, type HeldMonth } from './event-partitions';

/**
 * Time partitions of deliveries and delivery_attempts, and their retention.
 *
 * Both tables are partitioned by RANGE over the delivery's created_at (delivery_attempts copies it
 * as delivery_created_at), one partition per week, Monday 00:00 UTC to the next, named
 * `<table>_p<YYYYMMDD of the Monday>` (migration 20261125000000_partition_deliveries created the
 * first ones the same way). Both tables always hold the same weeks, so a delivery and its attempts
 * are created, kept and dropped together.
 *
 * Why weeks: at 10 million events a day with fan-out 2 a week is 140 M deliveries; with the default
 * 30-day retention, monthly partitions would keep up to 61 days of rows (twice the storage), daily
 * ones would keep 31 but make every lookup by delivery id alone (a job queued without storedAt, an
 * admin's lookup) probe over 30 partitions' indexes. Weeks keep at most 37 days of rows in 6
 * partitions, plus the empty weeks ahead. The worker's own lookups name the week (the job's
 * storedAt, see deliveryAttemptRepository), so PostgreSQL reads that week's partition only.
 *
 * Each maintenance pass (the delivery-worker runs one every PARTITION_MAINTENANCE_INTERVAL_MS):
 * 1. finishes any week a previous pass detached but did not drop (it died in between);
 * 2. creates the weeks from the current one to `weeksAhead` ahead, where missing;
 * 3. drops each week that ended more than the retention period ago: in one short transaction it
 *    locks both tables, checks the week holds no pending delivery, and detaches both partitions;
 *    then it counts their rows and drops them, with no lock on the live tables. A week that still
 *    holds a pending delivery (waiting out its retries, or replayed) is kept, whole, until a later
 *    pass finds it done: a pending delivery is never dropped, and rows are never deleted one by one.
 *
 * 4. the same for the monthly partitions of events (see event-partitions.ts): creates the months
 *    ahead, and drops those past EVENT_RETENTION_DAYS, with their events taken out of the counters.
 *
 * Passes of several worker processes exclude each other with an advisory lock; one that finds it
 * taken does nothing. Where pg_partman is installed and manages any of these tables (a part_config
 * row for it), the pass does nothing either: pg_partman then creates and drops the partitions (and
 * the event counters of GET /events no longer follow the events it drops).
 */

/** The partitioned tables of deliveries and their partition key, in the order partitions are created. */
export const DELIVERY_PARTITIONED_TABLES = ['deliveries', 'delivery_attempts'] as const;
export type DeliveryPartitionedTable = (typeof DELIVERY_PARTITIONED_TABLES)[number];

const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;
/** Weeks created ahead of the current one, by default. */
const DEFAULT_WEEKS_AHEAD = 4;
const DEFAULT_LOCK_TIMEOUT_MS = 2_000;
// Any constant unlikely to collide: "herald partitions".
const MAINTENANCE_LOCK = 0x4865_7061;

/** Monday 00:00 UTC of the week of `at`. */
export function weekStart(at: Date): Date {
  const day = Math.floor(at.getTime() / DAY_MS) * DAY_MS;
  const sinceMonday = (new Date(day).getUTCDay() + 6) % 7;
  return new Date(day - sinceMonday * DAY_MS);
}

/** The partition of `table` holding the week that starts at `week`. */
export function partitionName(table: DeliveryPartitionedTable, week: Date): string {
  return `${table}_p${week.toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/** The week a partition name stands for, or null for a name this module did not give. */
function weekOf(table: DeliveryPartitionedTable, name: string): Date | null {
  const match = new RegExp(`^${table}_p(\\d{4})(\\d{2})(\\d{2})$`).exec(name);
  return match ? new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]))) : null;
}

const day = (week: Date) => week.toISOString().slice(0, 10);

export interface PartitionMaintenanceOptions {
  /** The current time: weeks are created ahead of it and retention counts back from it. */
  now: Date;
  /** DELIVERY_RETENTION_DAYS: deliveries and attempts are kept at least this many days after their creation; 0 keeps them for ever. */
  deliveryRetentionDays: number;
  /** Weeks created ahead of the current one. Default 4. */
  weeksAhead?: number;
  /** EVENT_RETENTION_DAYS: events are kept at least this many days after their ingestion; 0 (the default) keeps them for ever. */
  eventRetentionDays?: number;
  /** Months of events created ahead of the current one. Default 3. */
  monthsAhead?: number;
  /** Longest wait for the tables' locks before a week's detach gives up until the next pass, in ms. Default 2000. */
  lockTimeoutMs?: number;
}

/** A week of deliveries dropped, with the rows it held. */
export interface DroppedWeek {
  /** Its Monday, YYYY-MM-DD (UTC). */
  week: string;
  deliveries: number;
  attempts: number;
}

/** A week past retention kept because some of its deliveries are still pending. */
export interface HeldWeek {
  week: string;
  pending: number;
}

export interface PartitionMaintenanceReport {
  /** Another process held the maintenance lock: this pass did nothing. */
  skipped: boolean;
  /** pg_partman manages these tables: Herald created and dropped nothing. */
  managedByPgPartman: boolean;
  /** Partitions created (table names). */
  created: string[];
  dropped: DroppedWeek[];
  held: HeldWeek[];
  /** Months of events dropped past EVENT_RETENTION_DAYS. */
  eventsDropped: DroppedMonth[];
  /** Months of events past EVENT_RETENTION_DAYS kept for their pending deliveries. */
  eventsHeld: HeldMonth[];
}

export function partitionMaintenance(pool: DatabasePool) {
  return {
    /** One maintenance pass (see above). */
    async maintain(options: PartitionMaintenanceOptions): Promise<PartitionMaintenanceReport> {
      const report: PartitionMaintenanceReport = {
        skipped: false,
        managedByPgPartman: false,
        created: [],
        dropped: [],
        held: [],
        eventsDropped: [],
        eventsHeld: [],
      };
      const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
      const client = await pool.connect();
      let locked = false;
      try {
        locked = (await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [MAINTENANCE_LOCK])).rows[0]!.locked;
        if (!locked) return { ...report, skipped: true };
        if (await managedByPgPartman(client)) return { ...report, managedByPgPartman: true };
        report.dropped.push(...(await dropDetached(client)));
        report.created.push(...(await createAhead(client, options)));
        if (options.deliveryRetentionDays > 0) {
          const cutoff = options.now.getTime() - options.deliveryRetentionDays * DAY_MS;
          for (const week of await attachedWeeks(client)) {
            if (week.getTime() + WEEK_MS > cutoff) continue;
            const pending = await detachWeek(client, week, lockTimeoutMs);
            if (pending > 0) report.held.push({ week: day(week), pending });
          }
          report.dropped.push(...(await dropDetached(client)));
        }
        report.created.push(
          ...(await createEventMonthsAhead(client, { now: options.now, monthsAhead: options.monthsAhead ?? DEFAULT_MONTHS_AHEAD, lockTimeoutMs })),
        );
        if ((options.eventRetentionDays ?? 0) > 0) {
          const events = await dropEventMonthsPastRetention(client, { now: options.now, retentionDays: options.eventRetentionDays!, lockTimeoutMs });
          report.eventsDropped.push(...events.dropped);
          report.eventsHeld.push(...events.held);
        }
        return report;
      } finally {
        if (locked) await client.query('SELECT pg_advisory_unlock($1)', [MAINTENANCE_LOCK]).catch(() => undefined);
        client.release();
      }
    },

    /** The weeks attached to deliveries, oldest first (Mondays, UTC). */
    async weeks(): Promise<string[]> {
      const client = await pool.connect();
      try {
        return (await attachedWeeks(client)).map(day);
      } finally {
        client.release();
      }
    },
  };
}

export type PartitionMaintenance = ReturnType<typeof partitionMaintenance>;

/** Whether pg_partman is installed and has either table in its part_config. */
async function managedByPgPartman(client: pg.PoolClient): Promise<boolean> {
  const { rows } = await client.query<{ schema: string }>(
    "SELECT n.nspname AS schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_partman'",
  );
  if (rows.length === 0) return false;
  const managed = await client.query(`SELECT 1 FROM ${quoteIdentifier(rows[0]!.schema)}.part_config WHERE parent_table = ANY($1::text[])`, [
    [...DELIVERY_PARTITIONED_TABLES, 'events'].map((table) => `public.${table}`),
  ]);
  return (managed.rowCount ?? 0) > 0;
}

/** The partitions of `table` named by this module, as their weeks. */
async function partitionWeeks(client: pg.PoolClient, table: DeliveryPartitionedTable): Promise<Date[]> {
  const { rows } = await client.query<{ name: string }>(
    'SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass',
    [`public.${table}`],
  );
  return rows.flatMap((row) => weekOf(table, row.name) ?? []).sort((a, b) => a.getTime() - b.getTime());
}

const attachedWeeks = (client: pg.PoolClient) => partitionWeeks(client, 'deliveries');

async function createAhead(client: pg.PoolClient, options: PartitionMaintenanceOptions): Promise<string[]> {
  const created: string[] = [];
  const first = weekStart(options.now).getTime();
  for (const table of DELIVERY_PARTITIONED_TABLES) {
    const existing = new Set((await partitionWeeks(client, table)).map((week) => week.getTime()));
    for (let n = 0; n <= (options.weeksAhead ?? DEFAULT_WEEKS_AHEAD); n += 1) {
      const week = new Date(first + n * WEEK_MS);
      if (existing.has(week.getTime())) continue;
      const name = partitionName(table, week);
      // Creating a partition locks its parent: wait no longer than a detach would.
      await client.query('BEGIN');
      try {
        await client.query(`SET LOCAL lock_timeout = ${Math.round(options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS)}`);
        await client.query(
          `CREATE TABLE ${quoteIdentifier(name)} PARTITION OF ${quoteIdentifier(table)} FOR VALUES FROM ('${week.toISOString()}') TO ('${new Date(week.getTime() + WEEK_MS).toISOString()}')`,
        );
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
      created.push(name);
    }
  }
  return created;
}

/**
 * Detaches the week from both tables unless it holds a pending delivery; returns how many pending
 * deliveries kept it (0: detached). Both tables are locked first, so that no replay can set one of
 * its deliveries back to pending between the check and the detach; the lock lasts as long as the
 * check of the week's pending deliveries (one index range) and two catalog changes.
 */
async function detachWeek(client: pg.PoolClient, week: Date, lockTimeoutMs: number): Promise<number> {
  const [deliveries, attempts] = [partitionName('deliveries', week), partitionName('delivery_attempts', week)];
  await client.query('BEGIN');
  try {
    await client.query(`SET LOCAL lock_timeout = ${Math.round(lockTimeoutMs)}`);
    await client.query('LOCK TABLE "deliveries", "delivery_attempts" IN ACCESS EXCLUSIVE MODE');
    const { rows } = await client.query<{ pending: string }>(`SELECT count(*) AS pending FROM ${quoteIdentifier(deliveries)} WHERE status = 'pending'`);
    const pending = Number(rows[0]!.pending);
    if (pending === 0) {
      const attached = new Set((await partitionWeeks(client, 'delivery_attempts')).map((w) => w.getTime()));
      if (attached.has(week.getTime())) await client.query(`ALTER TABLE "delivery_attempts" DETACH PARTITION ${quoteIdentifier(attempts)}`);
      await client.query(`ALTER TABLE "deliveries" DETACH PARTITION ${quoteIdentifier(deliveries)}`);
    }
    await client.query('COMMIT');
    return pending;
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}

/**
 * Counts and drops the detached weeks (tables named like partitions that are no longer attached),
 * attempts first. Nothing reads them any more, so counting holds no lock on the live tables.
 */
async function dropDetached(client: pg.PoolClient): Promise<DroppedWeek[]> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind = 'r' AND NOT c.relispartition AND c.relname ~ '^(deliveries|delivery_attempts)_p[0-9]{8}$'`,
  );
  const weeks = new Map<string, DroppedWeek>();
  for (const table of ['delivery_attempts', 'deliveries'] as const) {
    for (const { name } of rows) {
      const week = weekOf(table, name);
      if (!week) continue;
      const dropped = weeks.get(day(week)) ?? { week: day(week), deliveries: 0, attempts: 0 };
      await client.query('BEGIN');
      try {
        // A week of a busy platform is a large table to count: not under the pool's statement timeout.
        await client.query('SET LOCAL statement_timeout = 0');
        const { rows: counted } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${quoteIdentifier(name)}`);
        await client.query(`DROP TABLE ${quoteIdentifier(name)}`);
        await client.query('COMMIT');
        dropped[table === 'deliveries' ? 'deliveries' : 'attempts'] += Number(counted[0]!.n);
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
      weeks.set(day(week), dropped);
    }
  }
  return [...weeks.values()].sort((a, b) => a.week.localeCompare(b.week));
}
