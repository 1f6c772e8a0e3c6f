import type { Event } from '@herald/domain';
import type { DatabasePool } from '../pool';
import { inOrder, inTransaction, run, type Sql } from '../sql';
import { eventIngestQueries, type NewEvent } from './event-ingest-statements';
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
 * Sequence numbers: the insert locks each of its objects' row of object_sequences, moves it on by
 * the object's new events and gives them the numbers so reserved, in the batch's order. When a
 * concurrent ingest is still storing one of the batch's ids as the insert looks, the insert
 * numbers it, waits at the month's unique index and skips it, so fewer events are inserted than
 * numbered: this throws IngestRaceError, the caller rolls back (giving the numbers back) and runs
 * the transaction again, which then finds that event stored. An id given twice in one batch is
 * stored once, as its first event.
 */
export async function insertNewEvents(executor: Sql, given: readonly NewEvent[]): Promise<{ created: Map<string, number>; storedAt: Date }> {
  const batch = firstOfEachId(given);
  // One round trip on a pipelining connection. PostgreSQL runs the statements in order: the check
  // and the insert take their snapshots once the lock is granted, so after any advance of the month.
  const [, month, { rows }] = await inOrder(executor, [
    () => run(executor, eventIngestQueries.holdIngestMonth()),
    () => run(executor, eventIngestQueries.ingestMonthIsCurrent()),
    () => run(executor, eventIngestQueries.insertNew(batch)),
  ]);
  // What was inserted into the new month goes with the rollback.
  const [state] = month.rows;
  if (state?.current !== true) throw new IngestMonthTurnedError();
  const inserted = rows.filter((row) => row.id !== null);
  if (inserted.length !== (rows[0]?.meant ?? 0)) throw new IngestRaceError();
  return { created: new Map(inserted.map((row) => [row.id!, row.sequence!])), storedAt: state.stored_at };
}

/** The batch with each id's first event only. */
function firstOfEachId(batch: readonly NewEvent[]): readonly NewEvent[] {
  const ids = new Set(batch.map((item) => item.event.id));
  if (ids.size === batch.length) return batch;
  return batch.filter((item) => ids.delete(item.event.id));
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
