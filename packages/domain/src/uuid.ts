/**
 * A UUID in its text form (8-4-4-4-12 hex digits), upper or lower case: RFC 9562 asks readers to
 * accept both. Not anchored, so other patterns can embed it (`Event-<uuid>`).
 */
export const UUID_SOURCE = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';

/** A whole string that is a UUID, as a JSON Schema `pattern`. */
export const UUID_PATTERN = `^${UUID_SOURCE}$`;

const UUID_REGEXP = new RegExp(UUID_PATTERN);

/** Whether `value` is a UUID; lets a lookup answer "not found" before a uuid column rejects the value. */
export function isUuid(value: string): boolean {
  return UUID_REGEXP.test(value);
}
