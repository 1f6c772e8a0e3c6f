import { fullFormats } from 'ajv-formats/dist/formats';

// ajv-formats' own RFC 3339 check (calendar days, offsets, time zone required), reused rather than rewritten.
const isRfc3339DateTime = (fullFormats['date-time'] as { validate: (value: string) => boolean }).validate;

// The instants Herald stores and writes back as RFC 3339 in UTC: four-digit years once the offset
// is applied. PostgreSQL refuses year 0000 in ISO form, and `Date#toISOString` writes year 10000
// as "+010000-…", which neither PostgreSQL nor RFC 3339 reads.
const EARLIEST_MS = Date.parse('0001-01-01T00:00:00.000Z');
const LATEST_MS = Date.parse('9999-12-31T23:59:59.999Z');

/** What a date-time must be, as a violation says it. */
export const DATE_TIME_RULE = 'must be an RFC 3339 date-time with a time zone, e.g. 2026-06-30T12:00:00Z: no leap second, year 0001 to 9999 once in UTC';

/**
 * The one reading of an RFC 3339 date-time for the whole API: the instant it names, or undefined when
 * it is not RFC 3339 or names no instant that both `Date` and PostgreSQL's `timestamptz` hold and
 * that reads back as RFC 3339 in UTC (a leap second such as `23:59:60`, which `Date` cannot
 * represent; a year before 0001 or after 9999 once the offset is applied). The schemas' `date-time`
 * format is this check, so a value a schema accepted always parses here.
 */
export function parseDateTime(value: string): Date | undefined {
  if (!isRfc3339DateTime(value)) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms) || ms < EARLIEST_MS || ms > LATEST_MS) return undefined;
  return new Date(ms);
}

/** The instant of a date-time a `date-time` format already accepted; throws if it was not checked. */
export function toDate(checked: string): Date {
  const date = parseDateTime(checked);
  if (!date) throw new TypeError(`not a checked date-time: ${JSON.stringify(checked)}`);
  return date;
}
