import { parseDateTime, ValidationError, type Violation } from '@herald/domain';

// What a datetime-local input sends: a date and a wall-clock time with no zone, with seconds (and
// a fraction) when its step asks for them or the value holds them.
const LOCAL_DATE_TIME = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(:\d{2}(?:\.\d{1,3})?)?$/;

/** The recovery form's fields as the browser posts them (an urlencoded body). */
interface RecoveryForm {
  from?: unknown;
  to?: unknown;
}

/**
 * The recovery the form asks for, as the merchant API's body says it ({from, to?}, RFC 3339 in
 * UTC): the form labels its two datetime-local inputs as UTC, so `2026-11-28T09:30` is read as
 * `2026-11-28T09:30:00Z`. An empty `to` is left out (up to now). Throws ValidationError naming the
 * field when a value is missing or not such a date and time; the recovery checks the window itself.
 */
export function recoveryInputOf(form: RecoveryForm): { from: string; to?: string } {
  const violations: Violation[] = [];
  const from = utcOf(form.from, 'from', true, violations);
  const to = utcOf(form.to, 'to', false, violations);
  if (violations.length > 0 || from === undefined) throw new ValidationError(violations);
  return to === undefined ? { from } : { from, to };
}

function utcOf(value: unknown, field: string, required: boolean, violations: Violation[]): string | undefined {
  const text = typeof value === 'string' ? value.trim() : undefined;
  if (text === undefined && value !== undefined) {
    violations.push({ pointer: `/${field}`, message: 'must be given once, as one date and time', keyword: 'type' });
    return undefined;
  }
  if (!text) {
    if (required) violations.push({ pointer: `/${field}`, message: 'is required: the date and time (UTC) the recovery starts at', keyword: 'required' });
    return undefined;
  }
  const match = LOCAL_DATE_TIME.exec(text);
  const utc = match ? `${match[1]}T${match[2]}${match[3] ?? ':00'}Z` : undefined;
  if (utc === undefined || parseDateTime(utc) === undefined) {
    violations.push({
      pointer: `/${field}`,
      message: 'must be a date and time in UTC, as YYYY-MM-DDTHH:MM (seconds optional), e.g. 2026-11-28T09:30',
      keyword: 'format',
    });
    return undefined;
  }
  return utc;
}
