import { createHash } from 'node:crypto';
import type { Event } from '@herald/domain';
import { Prisma, sqlPool, type PrismaClient } from '../client';
import type { Sql } from '../sql';
import type { ApiKeyScope } from './api-keys';
import { locateOffset, merchantScope, programScope, type CountKey } from './event-counts';

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

/** An events row as the SELECTs of EVENT_COLUMN_LIST read it. */
export type EventRow = {
  id: string;
  created_at: Date;
  source_system: string | null;
  origin: string;
  event_type: string;
  object_id: string;
  object_type: string;
  metadata: Prisma.JsonValue | null;
  data: Prisma.JsonValue | null;
  context: string | null;
};

/** The event as a merchant sees it: optional fields that were not set are absent, not null. */
export function toEvent(row: EventRow): Event {
  const event: Record<string, unknown> = {
    id: row.id,
    createdAt: row.created_at.toISOString(),
    ...(row.source_system === null ? {} : { sourceSystem: row.source_system }),
    origin: row.origin,
    eventType: row.event_type,
    objectId: row.object_id,
    objectType: row.object_type,
    ...(row.metadata === null ? {} : { metadata: row.metadata }),
    ...(row.data === null ? {} : { data: row.data }),
    ...(row.context === null ? {} : { context: row.context }),
  };
  return event as Event;
}

/** The columns toEvent reads, of the events table aliased `e`. */
export const EVENT_COLUMN_LIST = 'e.id, e.created_at, e.source_system, e.origin, e.event_type, e.object_id, e.object_type, e.metadata, e.data, e.context';

export function eventRepository(prisma: PrismaClient, options: EventRepositoryOptions = {}) {
  const bucketWalkMinOffset = options.bucketWalkMinOffset ?? 2_000;
  return {
    /**
     * One page of a tenant's events, oldest first by (createdAt, id), and the exact count of all
     * matching events. Counts for the spec's filters come from event_counts; the extension filters
     * count over their index.
     */
    async list(query: EventListQuery): Promise<{ count: number; events: Event[] }> {
      const sql = sqlPool(prisma);
      const offset = (query.page - 1) * query.pageSize;
      // A deep page starts from the second the bucket counters point at, so only the events of that
      // second are skipped; a shallow one skips index entries directly. (Past the last event the
      // walk finds no bucket, and the count below leaves the page empty.)
      const start =
        offset >= bucketWalkMinOffset && usesOnlyCountedFilters(query) ? await locateOffset(sql, countKey(query), offset) : null;
      const params = new Params();
      const where = whereClause(query, params);
      const from = start ? `AND created_at >= to_timestamp(${params.add(Number(start.fromSecond))})` : '';
      const skip = params.add(start ? start.skip : offset);
      const limit = params.add(query.pageSize);
      const count = countSql(query, params);
      // One round trip for the count and the page. The count is computed once (MATERIALIZED); the
      // page is read only when the count says it exists (a one-time filter), and through a deferred join: the page's ids are found on the
      // narrow index first, then only those rows are read.
      const text = `WITH c AS MATERIALIZED (SELECT (${count}) AS total)
         SELECT c.total, p.*
         FROM c
         LEFT JOIN LATERAL (
           SELECT ${EVENT_COLUMN_LIST}
           FROM (
             SELECT id, created_at FROM events
             WHERE c.total > ${params.add(offset)} AND ${where} ${from}
             ORDER BY created_at, id
             OFFSET ${skip} LIMIT ${limit}
           ) page
           JOIN events e ON e.id = page.id
         ) p ON true
         ORDER BY p.created_at, p.id`;
      // A named statement: each connection parses it once (a few dozen shapes at most, one per set
      // of filters), then only binds and plans it (measured: a third less PostgreSQL CPU per request).
      const { rows } = await sql.query<Partial<EventRow> & { total: string }>({ name: statementName(text), text, values: params.values });
      return {
        count: Number(rows[0]?.total ?? 0),
        events: rows.filter((row): row is EventRow & { total: string } => row.id !== null && row.id !== undefined).map(toEvent),
      };
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
export async function findTenants(sql: Sql, programIds: readonly string[], merchantIds: readonly string[]): Promise<KnownTenants> {
  // Programs come back with a null merchant, merchants with their program.
  const { rows } = await sql.query<{ program_id: string; merchant_id: string | null }>(
    `SELECT id AS program_id, NULL AS merchant_id FROM programs WHERE id = ANY($1::text[])
     UNION ALL
     SELECT program_id, id FROM merchants WHERE id = ANY($2::text[])`,
    [programIds, merchantIds],
  );
  return {
    programIds: new Set(rows.filter((r) => r.merchant_id === null).map((r) => r.program_id)),
    merchantPrograms: new Map(rows.filter((r) => r.merchant_id !== null).map((r) => [r.merchant_id!, r.program_id])),
  };
}

/** Inserts the events whose id is not stored yet and leaves the others alone; returns the ids it inserted. */
export async function insertNewEvents(sql: Sql, batch: readonly NewEvent[]): Promise<Set<string>> {
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO events (id, program_id, merchant_id, created_at, source_system, origin, event_type, object_id, object_type, metadata, data, context, content_hash)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::text[], $8::text[],
                          $9::text[], $10::jsonb[], $11::jsonb[], $12::text[], $13::text[])
     ON CONFLICT (id) DO NOTHING
     RETURNING id`,
    [
      batch.map((b) => b.event.id),
      batch.map((b) => b.programId),
      batch.map((b) => b.merchantId ?? null),
      batch.map((b) => new Date(b.event.createdAt).toISOString()),
      batch.map((b) => b.event.sourceSystem ?? null),
      batch.map((b) => b.event.origin),
      batch.map((b) => b.event.eventType),
      batch.map((b) => b.event.objectId),
      batch.map((b) => b.event.objectType),
      batch.map((b) => jsonOrNull(b.event.metadata)),
      batch.map((b) => jsonOrNull(b.event.data)),
      batch.map((b) => b.event.context ?? null),
      batch.map((b) => b.contentHash),
    ],
  );
  return new Set(rows.map((r) => r.id));
}

/** The stored events with these ids, by id. */
export async function loadStoredEvents(sql: Sql, eventIds: readonly string[]): Promise<Map<string, StoredEvent>> {
  if (eventIds.length === 0) return new Map();
  const { rows } = await sql.query<EventRow & { content_hash: string }>(
    `SELECT ${EVENT_COLUMN_LIST}, e.content_hash FROM events e WHERE e.id = ANY($1::text[])`,
    [eventIds],
  );
  return new Map(rows.map((row) => [row.id, { event: toEvent(row), contentHash: row.content_hash }]));
}

function usesOnlyCountedFilters(query: EventListQuery): boolean {
  return query.eventType === undefined && query.objectId === undefined && query.createdFrom === undefined && query.createdTo === undefined;
}

const statementNames = new Map<string, string>();
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (!name) {
    name = `events-page-${createHash('sha1').update(text).digest('hex').slice(0, 16)}`;
    statementNames.set(text, name);
  }
  return name;
}

/** Positional parameters of one node-postgres statement. */
class Params {
  readonly values: unknown[] = [];
  /** Adds a value and returns its placeholder. */
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** The exact count of the query's events: from event_counts for the spec's filters, else over their index. */
function countSql(query: EventListQuery, params: Params): string {
  if (usesOnlyCountedFilters(query)) {
    const key = countKey(query);
    return `SELECT coalesce((SELECT count FROM event_counts WHERE scope = ${params.add(key.scope)} AND origin = ${params.add(key.origin ?? '')} AND object_type = ${params.add(key.objectType ?? '')}), 0)`;
  }
  return `SELECT count(*) FROM events WHERE ${whereClause(query, params)}`;
}

function whereClause(query: EventListQuery, params: Params): string {
  const conditions = [
    query.scope.kind === 'merchant' ? `merchant_id = ${params.add(query.scope.merchantId)}` : `program_id = ${params.add(query.scope.programId)}`,
  ];
  if (query.origin !== undefined) conditions.push(`origin = ${params.add(query.origin)}`);
  if (query.objectType !== undefined) conditions.push(`object_type = ${params.add(query.objectType)}`);
  if (query.eventType !== undefined) conditions.push(`event_type = ${params.add(query.eventType)}`);
  if (query.objectId !== undefined) conditions.push(`object_id = ${params.add(query.objectId)}`);
  if (query.createdFrom !== undefined) conditions.push(`created_at >= ${params.add(query.createdFrom)}`);
  if (query.createdTo !== undefined) conditions.push(`created_at < ${params.add(query.createdTo)}`);
  return conditions.join(' AND ');
}

export type EventRepository = ReturnType<typeof eventRepository>;
