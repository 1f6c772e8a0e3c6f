/**
 * The scale bench's data: millions of events loaded with COPY, spread over the past year, with
 * counters recounted from the stored rows so that GET /events `count` and deep pages stay exact.
 *
 * Why COPY (through pg-copy-streams, as node-postgres has no COPY of its own): the rows are made
 * here, in this process, on one core, while PostgreSQL only parses and stores them on the other;
 * an INSERT ... SELECT generate_series makes and stores them in one backend, on one core.
 * The indexes and keys of events are dropped before the load and restored after it: each index is
 * then built in one sort, each foreign key checked in one join, instead of six index insertions
 * (one at a random place) and two key lookups per row (the load ran about 3 times as fast).
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { createEventMonthsAhead } from '@herald/db';

/** Whose events a scale seed stores: a program and its merchants `${merchantPrefix}0` to `${merchantPrefix}${merchants - 1}`, which must exist. */
export interface ScaleTenant {
  programId: string;
  merchantPrefix: string;
  merchants: number;
}

export interface ScaleSeedOptions {
  tenant: ScaleTenant;
  count: number;
  /** The seed spans the `days` days before the day of `now` (UTC). */
  now: Date;
  days: number;
  /**
   * Each day's events come in one burst from this hour (UTC), 1 ms apart: a busy platform's
   * traffic, and few per-second counter rows (at most one per counted combination per second).
   * Seeds of one database should use different hours, so that their rows never share a millisecond.
   */
  burstHour: number;
  log: (message: string) => void;
}

const DAY_MS = 86_400_000;
const ORIGINS = ['api', 'widget', 'automated'] as const;
const OBJECT_TYPES = ['subscription', 'subscription.plan', 'billing-cycle', 'payment-series', 'transactions', 'manual-retry', 'payment', 'refund'] as const;
// Every seeded event is numbered 1 in its object (sequence): the bench reads pages, never an
// object's order, and no ingest numbers these objects after the seed.
const COLUMNS = 'id, program_id, merchant_id, created_at, ingested_at, origin, event_type, object_id, object_type, sequence, metadata, content_hash';
/** Rows per COPY chunk written to the stream. */
const CHUNK = 5_000;

/**
 * Who owns event `i` of a seed: of every `merchants + 1` events, one is program-owned (no
 * merchant) and the others go to each merchant in turn.
 */
function ownerOf(i: number, tenant: ScaleTenant): string | null {
  const slot = i % (tenant.merchants + 1);
  return slot === tenant.merchants ? null : `${tenant.merchantPrefix}${slot}`;
}

/** How many of a seed's `count` events merchant `${merchantPrefix}${m}` owns. */
export function merchantShare(count: number, tenant: ScaleTenant, m: number): number {
  const cycle = tenant.merchants + 1;
  return Math.floor(count / cycle) + (count % cycle > m ? 1 : 0);
}

/**
 * Loads `count` events with COPY (indexes and keys of events dropped before, restored after), then
 * recounts the tenant's counters from its stored rows and analyzes the tables. Returns the rows
 * per second of the load alone and the seconds of each phase.
 */
export async function seedScaleEvents(
  client: pg.Client,
  options: ScaleSeedOptions,
): Promise<{ copyRowsPerSecond: number; seconds: Record<'partitions' | 'copy' | 'rebuild' | 'counters' | 'analyze', number> }> {
  const { tenant, count, log } = options;
  const firstDay = Math.floor(options.now.getTime() / DAY_MS) * DAY_MS - options.days * DAY_MS;
  const perDay = Math.ceil(count / options.days);
  const createdAt = (i: number): number => firstDay + Math.floor(i / perDay) * DAY_MS + options.burstHour * 3_600_000 + (i % perDay);
  const timer = phaseTimer();

  // Settings of this session only: a large sort memory builds each index in one pass.
  await client.query(`SET maintenance_work_mem = '512MB'`);
  await client.query(`SET work_mem = '256MB'`);
  await ensureEventPartitions(client, new Date(createdAt(0)), new Date(createdAt(count - 1) + 1_000));
  timer.lap('partitions');

  const rebuild = await dropLoadCosts(client);
  const started = performance.now();
  let reported = started;
  function* chunks(): Generator<string> {
    for (let start = 0; start < count; start += CHUNK) {
      const lines: string[] = [];
      for (let i = start; i < Math.min(count, start + CHUNK); i += 1) {
        const uuid = randomUUID();
        const at = createdAt(i);
        // Origins cycle every event, object types every 12: each second holds every combination.
        lines.push(
          `Event-${uuid}\t${tenant.programId}\t${ownerOf(i, tenant) ?? '\\N'}\t${new Date(at).toISOString()}\t${new Date(at + 1_000).toISOString()}\t` +
            `${ORIGINS[i % 3]}\tcreated\tobj-${i}\t${OBJECT_TYPES[Math.floor(i / 12) % 8]}\t1\t{"bench": "true"}\t${uuid.replaceAll('-', '').repeat(2)}\n`,
        );
      }
      yield lines.join('');
      const now = performance.now();
      if (now - reported >= 5_000) {
        reported = now;
        const done = Math.min(count, start + CHUNK);
        log(
          `COPY: ${done.toLocaleString('en-US')} of ${count.toLocaleString('en-US')} rows, ${Math.round(done / ((now - started) / 1000)).toLocaleString('en-US')} rows/s`,
        );
      }
    }
  }
  let copySeconds: number;
  try {
    await pipeline(Readable.from(chunks()), client.query(copyFrom(`COPY events (${COLUMNS}) FROM STDIN`)));
    copySeconds = (performance.now() - started) / 1000;
    log(`COPY: ${count.toLocaleString('en-US')} rows in ${copySeconds.toFixed(1)} s, ${Math.round(count / copySeconds).toLocaleString('en-US')} rows/s`);
    timer.lap('copy');
  } finally {
    // A failed COPY stored nothing; events gets its indexes and keys back either way.
    for (const statement of rebuild) await client.query(statement);
  }
  timer.lap('rebuild');
  await recountCounters(client, tenant);
  timer.lap('counters');
  await client.query('ANALYZE events');
  await client.query('ANALYZE event_counts');
  await client.query('ANALYZE event_bucket_counts');
  timer.lap('analyze');
  log(
    `seeded ${count.toLocaleString('en-US')} events: ${Object.entries(timer.seconds)
      .map(([phase, s]) => `${phase} ${s.toFixed(1)} s`)
      .join(', ')}`,
  );
  return { copyRowsPerSecond: count / copySeconds, seconds: timer.seconds };
}

function phaseTimer() {
  const seconds = {} as Record<'partitions' | 'copy' | 'rebuild' | 'counters' | 'analyze', number>;
  let last = performance.now();
  return {
    seconds,
    lap(phase: keyof typeof seconds): void {
      const now = performance.now();
      seconds[phase] = (now - last) / 1000;
      last = now;
    },
  };
}

/**
 * Drops what makes each stored row cost more, returning the statements that restore it: the
 * indexes of events that back no constraint (built again, each in one sort), its primary key (a
 * random id per row: past the cache, each insertion into that index is a read and a write of its
 * own page) with the foreign keys that reference it, and its own foreign keys (checked again in
 * one join, instead of two lookups per row).
 */
async function dropLoadCosts(client: pg.Client): Promise<string[]> {
  const indexes = await dropSecondaryIndexes(client);
  // Referencing keys first, the primary key last; restored in the reverse order. conparentid = 0:
  // a partitioned table's constraint, not its partitions' copies of it.
  const { rows } = await client.query<{ table: string; name: string; definition: string }>(
    `SELECT conrelid::regclass::text AS table, conname AS name, pg_get_constraintdef(oid) AS definition
     FROM pg_constraint
     WHERE conparentid = 0 AND ((conrelid = 'events'::regclass AND contype IN ('p', 'f')) OR (confrelid = 'events'::regclass AND contype = 'f'))
     ORDER BY confrelid = 'events'::regclass DESC, contype = 'p'`,
  );
  for (const { table, name } of rows) await client.query(`ALTER TABLE ${table} DROP CONSTRAINT ${quote(name)}`);
  return [...indexes, ...rows.reverse().map((r) => `ALTER TABLE ${r.table} ADD CONSTRAINT ${quote(r.name)} ${r.definition}`)];
}

/**
 * Drops the indexes of events that back no constraint, returning the statements that build them
 * again. On a partitioned table, an index of the parent is listed `ON ONLY` the parent; it is built
 * again on the whole table, partitions included.
 */
async function dropSecondaryIndexes(client: pg.Client): Promise<string[]> {
  // The parent's own indexes, and each month's own unique index on id (an index of the partition,
  // not a copy of a parent's index: those go with the parent's).
  const { rows } = await client.query<{ name: string; definition: string }>(`
    SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS definition
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE (i.indrelid = 'events'::regclass
           OR i.indrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'events'::regclass))
      AND NOT EXISTS (SELECT 1 FROM pg_inherits p WHERE p.inhrelid = i.indexrelid)
      AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)`);
  for (const { name } of rows) await client.query(`DROP INDEX ${quote(name)}`);
  return rows.map((r) => r.definition.replace(' ON ONLY ', ' ON '));
}

const quote = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/**
 * Creates the months of events the seed needs that are missing (events is partitioned by month of
 * ingested_at), with packages/db's own function, so that COPY finds a partition for every row.
 */
async function ensureEventPartitions(client: pg.Client, from: Date, to: Date): Promise<void> {
  const monthsAhead = (to.getUTCFullYear() - from.getUTCFullYear()) * 12 + to.getUTCMonth() - from.getUTCMonth();
  await createEventMonthsAhead(client, { now: from, monthsAhead, lockTimeoutMs: 10_000 });
}

/**
 * Sets the tenant's counters (event_counts, event_bucket_counts) to what the statement of countsStatement would have
 * made of its stored events, whatever was there: the rows are grouped by owner, origin, object type
 * and second once, rolled up to minutes and days, then spread over the scopes (program, merchant)
 * and the "any" combinations, so the expansion runs over groups, never over every event.
 */
async function recountCounters(client: pg.Client, tenant: ScaleTenant): Promise<void> {
  const scopes = `SELECT 'program:' || $1 UNION ALL SELECT 'merchant:' || id FROM merchants WHERE program_id = $1`;
  await client.query('BEGIN');
  try {
    await client.query(`DELETE FROM event_counts WHERE scope IN (${scopes})`, [tenant.programId]);
    await client.query(`DELETE FROM event_bucket_counts WHERE scope IN (${scopes})`, [tenant.programId]);
    await client.query(
      `CREATE TEMP TABLE seed_buckets ON COMMIT DROP AS
       WITH seconds AS (
         SELECT merchant_id, origin, object_type, floor(extract(epoch FROM created_at))::bigint AS second, count(*) AS n
         FROM events WHERE program_id = $1
         GROUP BY 1, 2, 3, 4)
       SELECT merchant_id, origin, object_type, g.granularity, second - second % g.granularity AS bucket_start, sum(n) AS n
       FROM seconds CROSS JOIN (VALUES (86400), (60), (1)) g(granularity)
       GROUP BY 1, 2, 3, 4, 5`,
      [tenant.programId],
    );
    const spread = `
      FROM seed_buckets b
      CROSS JOIN LATERAL (VALUES ('program:' || $1::text), ('merchant:' || b.merchant_id)) s(scope)
      CROSS JOIN LATERAL (VALUES (''), (b.origin)) o(origin)
      CROSS JOIN LATERAL (VALUES (''), (b.object_type)) t(object_type)
      WHERE s.scope IS NOT NULL`;
    await client.query(
      `INSERT INTO event_bucket_counts (scope, origin, object_type, granularity, bucket_start, count)
       SELECT s.scope, o.origin, t.object_type, b.granularity, b.bucket_start, sum(b.n) ${spread}
       GROUP BY 1, 2, 3, 4, 5`,
      [tenant.programId],
    );
    await client.query(
      `INSERT INTO event_counts (scope, origin, object_type, count)
       SELECT s.scope, o.origin, t.object_type, sum(b.n) ${spread} AND b.granularity = 86400
       GROUP BY 1, 2, 3`,
      [tenant.programId],
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}
