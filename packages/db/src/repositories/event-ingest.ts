import type { Event } from '@herald/domain';
import type { DatabasePool } from '../pool';
import { inOrder, inTransaction, run, type Sql } from '../sql';
import { eventIngestQueries } from './event-ingest-statements';
import type { NewEvent } from './event-ingest-statements';
import { toEvent } from './event-json';

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

// The ingest's statements on the events table, run inside the caller's transaction. Each is one
// statement whatever the batch size: rows travel as arrays through unnest (measured: Prisma's
// createMany and per-row work cost the ingest several times what PostgreSQL spends storing rows).

/** Which of these programs and merchants exist, in one round trip. */
export async function findTenants(executor: Sql, programIds: readonly string[], merchantIds: readonly string[]): Promise<KnownTenants> {
  // Programs come back with a null merchant, merchants with their program.
  const { rows } = await run(executor, eventIngestQueries.findTenants(programIds, merchantIds));
  return {
    programIds: new Set(rows.filter((r) => r.merchant_id === null).map((r) => r.program_id)),
    merchantPrograms: new Map(rows.filter((r) => r.merchant_id !== null).map((r) => [r.merchant_id!, r.program_id])),
  };
}

/**
 * Inserts the events whose id is not stored yet, in any month, and leaves the others alone; returns
 * the ids it inserted with the sequence number each got, and the time they were stored at: their
 * ingested_at, which is also the created_at of the deliveries the same transaction stores (both
 * columns default to its `now()`). Call inside a READ COMMITTED transaction (the ingest's,
 * ingestStore).
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
 *
 * Sequence numbers: before the insert, the objects' rows of object_sequences are locked and moved
 * on by the events to number (numberNew); the insert gives each object's events the numbers so
 * reserved, in the batch's order. When a concurrent ingest of one of the batch's ids commits
 * between the two statements, fewer events are inserted than numbered: this throws
 * IngestRaceError, the caller rolls back (giving the numbers back) and runs the transaction again,
 * which then finds that event stored.
 */
export async function insertNewEvents(executor: Sql, batch: readonly NewEvent[]): Promise<{ created: Map<string, number>; storedAt: Date }> {
  // One round trip on a pipelining connection. PostgreSQL runs the statements in order: the check,
  // the numbering and the insert take their snapshots once the lock is granted, so after any
  // advance of the month; the insert's, once the objects' rows are locked.
  const [, month, numbered, { rows }] = await inOrder(executor, [
    () => run(executor, eventIngestQueries.holdIngestMonth()),
    () => run(executor, eventIngestQueries.ingestMonthIsCurrent()),
    () => run(executor, eventIngestQueries.numberNew(batch)),
    () => run(executor, eventIngestQueries.insertNew(batch)),
  ]);
  // What was inserted into the new month goes with the rollback.
  const [state] = month.rows;
  if (state?.current !== true) throw new IngestMonthTurnedError();
  if (rows.length !== Number(numbered.rows[0]?.numbered ?? 0)) throw new IngestRaceError();
  return { created: new Map(rows.map((r) => [r.id, r.sequence])), storedAt: state.stored_at };
}

/** The month ingests store into has turned: roll back, advanceIngestMonth, and run the ingest again. */
export class IngestMonthTurnedError extends Error {
  constructor() {
    super('the ingest month has turned: advance it and run the ingest again');
    this.name = 'IngestMonthTurnedError';
  }
}

/** A concurrent ingest stored one of the batch's ids after it was numbered: roll back and run the ingest again. */
export class IngestRaceError extends Error {
  constructor() {
    super('a concurrent ingest stored an event of this batch after it was numbered: run the ingest again');
    this.name = 'IngestRaceError';
  }
}

/**
 * Makes the database clock's month the ingest month, in a transaction of its own. It waits for
 * every ingest still storing into the previous month to commit (they hold the lock shared), and
 * ingests starting meanwhile wait for it.
 */
export async function advanceIngestMonth(pool: DatabasePool): Promise<void> {
  await inTransaction(pool, async (executor) => {
    await run(executor, eventIngestQueries.takeIngestMonth());
    await run(executor, eventIngestQueries.advanceIngestMonth());
  });
}

/** The stored events with these ids, by id. */
export async function loadStoredEvents(executor: Sql, eventIds: readonly string[]): Promise<Map<string, StoredEvent>> {
  if (eventIds.length === 0) return new Map();
  const { rows } = await run(executor, eventIngestQueries.loadStored(eventIds));
  return new Map(rows.map((row) => [row.id, { event: toEvent(row), contentHash: row.content_hash }]));
}
