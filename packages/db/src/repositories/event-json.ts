import type { Event } from '@herald/domain';
import type { RawBuilder, Selectable } from 'kysely';
import type { Event as EventTable } from '../generated/kysely/schema';
import { sql } from '../sql';

// An events row read back as the domain's Event (toEvent, for the ingest's answer) or written as
// JSON text by PostgreSQL (eventJson, for GET /events and callbacks): kept together so that the
// two writings stay alike field for field (test/event-json.test.ts compares them).

/** The columns of an event (toEvent and eventJson read them), of the events table aliased `e`. */
export const EVENT_COLUMNS = [
  'e.id',
  'e.created_at',
  'e.source_system',
  'e.origin',
  'e.event_type',
  'e.object_id',
  'e.object_type',
  'e.sequence',
  'e.metadata',
  'e.data',
  'e.context',
] as const;

/** An events row as the statements selecting EVENT_COLUMNS read it (the schema's types). */
type EventRow = Pick<
  Selectable<EventTable>,
  'id' | 'created_at' | 'source_system' | 'origin' | 'event_type' | 'object_id' | 'object_type' | 'sequence' | 'metadata' | 'data' | 'context'
>;

/**
 * The event as the ingest answers it: optional fields that were not set are absent, not null, in
 * numberedEvent's order. (GET /events and callbacks send eventJson's text.)
 */
export function toEvent(row: EventRow): Event {
  return numberedEvent(
    {
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
    } as Omit<Event, 'sequence'>,
    row.sequence,
  );
}

/**
 * The event with its sequence number, field by field in the Event's order, optional fields absent
 * when not set: the one writing of an event's fields in JavaScript (toEvent for a stored row; the
 * ingest for the events it has just stored, without reading them back).
 */
export function numberedEvent(event: Omit<Event, 'sequence'>, sequence: number): Event {
  const numbered: Record<string, unknown> = { id: event.id, createdAt: event.createdAt };
  if (event.sourceSystem !== undefined) numbered.sourceSystem = event.sourceSystem;
  numbered.origin = event.origin;
  numbered.eventType = event.eventType;
  numbered.objectId = event.objectId;
  numbered.objectType = event.objectType;
  numbered.sequence = sequence;
  if (event.metadata !== undefined) numbered.metadata = event.metadata;
  if (event.data !== undefined) numbered.data = event.data;
  if (event.context !== undefined) numbered.context = event.context;
  return numbered as Event;
}

/**
 * The JSON text of the event in the columns of `alias` (an events row), written by PostgreSQL with
 * what toEvent and JSON.stringify would write: the same fields in the same order, absent when
 * null, createdAt in UTC milliseconds. Inside metadata and data it is PostgreSQL's writing of
 * jsonb: a space after each `:` and `,`, numbers in plain decimal (see eventJsonBytes). NULL when
 * the row is absent (a left join that found none). GET /events sends its pages so and callbacks
 * carry it as their body, byte for byte the same: the rows are never parsed into objects and
 * written back.
 */
export function eventJson(alias: string) {
  const column = (name: string) => sql.ref(`${alias}.${name}`);
  const text = (name: string) => sql`to_json(${column(name)})::text`;
  // `||` with NULL is NULL, and concat skips NULLs: an absent field writes nothing. A JSON null
  // stored in a jsonb column is absent too, as toEvent reads it (pg parses it to null).
  const optional = (field: string, value: RawBuilder<unknown>) => sql`${sql.lit(`,"${field}":`)} || ${value}`;
  const jsonb = (name: string) => sql`nullif(${column(name)}, 'null'::jsonb)::text`;
  return sql<
    string | null
  >`case when ${column('id')} is not null then concat(${sql.lit('{"id":')}, ${text('id')}, ${sql.lit(',"createdAt":"')}, to_char(${column('created_at')} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), '"', ${optional('sourceSystem', text('source_system'))}, ${sql.lit(',"origin":')}, ${text('origin')}, ${sql.lit(',"eventType":')}, ${text('event_type')}, ${sql.lit(',"objectId":')}, ${text('object_id')}, ${sql.lit(',"objectType":')}, ${text('object_type')}, ${sql.lit(',"sequence":')}, ${column('sequence')}::text, ${optional('metadata', jsonb('metadata'))}, ${optional('data', jsonb('data'))}, ${optional('context', text('context'))}, '}') end`;
}

/** The most bytes `,"sequence":<n>` takes: a sequence is a PostgreSQL integer, at most 2147483647 (10 digits). */
const SEQUENCE_FIELD_MAX_BYTES = ',"sequence":'.length + 10;

/**
 * The UTF-8 bytes of eventJson's text of this event, as stored (createdAt in UTC milliseconds):
 * its callback body's size. JSON.stringify's size, plus what PostgreSQL writes more in metadata
 * and data (jsonbExtraBytes). For an event not numbered yet (the ingest checks sizes before it
 * stores), its sequence counts at its largest.
 */
export function eventJsonBytes(event: Omit<Event, 'sequence'> & { sequence?: number }): number {
  const sequenceBytes = event.sequence === undefined ? SEQUENCE_FIELD_MAX_BYTES : 0;
  return Buffer.byteLength(JSON.stringify(event), 'utf8') + sequenceBytes + jsonbExtraBytes(event.metadata) + jsonbExtraBytes(event.data);
}

/**
 * How many more bytes PostgreSQL's text of a jsonb value has than JSON.stringify's: a space after
 * each `:` and `,`, and every number in plain decimal (1e+21 is written with 22 digits, 1e-7 as
 * 0.0000001). Strings are escaped alike.
 */
function jsonbExtraBytes(value: unknown): number {
  if (typeof value === 'number') return plainDecimalLength(value) - String(value).length;
  if (value === null || typeof value !== 'object') return 0;
  const items = Array.isArray(value) ? value : Object.values(value);
  // One space after each `,` between items, and after the `:` of each of an object's keys.
  let extra = Math.max(0, items.length - 1) + (Array.isArray(value) ? 0 : items.length);
  for (const item of items) extra += jsonbExtraBytes(item);
  return extra;
}

/** The length of a number as PostgreSQL's numeric writes it, from JavaScript's shortest form `d[.ddd]e±k`. */
function plainDecimalLength(value: number): number {
  const written = String(value);
  const exponentAt = written.indexOf('e');
  if (exponentAt < 0) return written.length;
  const sign = written.startsWith('-') ? 1 : 0;
  const exponent = Number(written.slice(exponentAt + 1));
  const pointAt = written.indexOf('.');
  const fractionDigits = pointAt < 0 ? 0 : exponentAt - pointAt - 1;
  if (exponent < 0) return sign + '0.'.length + fractionDigits - exponent;
  const remaining = Math.max(0, fractionDigits - exponent);
  return sign + exponent + 1 + (remaining > 0 ? 1 + remaining : 0);
}
