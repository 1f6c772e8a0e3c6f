import type { Validator } from '@herald/domain';
import { HttpError } from './http-error';

/** Most records one page may hold. */
const MAX_PAGE_SIZE = 100;
const DEFAULT_PAGE_SIZE = 20;

/** Highest page number a query may ask for (nine digits keep offsets within PostgreSQL's bigint). */
const MAX_PAGE = 999_999_999;

/**
 * The `page` and `pageSize` query parameters, as the integers they mean: parseQuery reads their
 * digits as numbers before validating, so the same schema validates the query and documents it.
 */
export const pagingParameters = {
  page: { type: 'integer', minimum: 1, maximum: MAX_PAGE, default: 1, description: 'Page number to return, from 1.' },
  pageSize: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE, description: `Records per page, 1 to ${MAX_PAGE_SIZE}.` },
} as const;

const PAGING_INTEGERS: ReadonlySet<string> = new Set(Object.keys(pagingParameters));
const DIGITS = /^[0-9]+$/;

/** The names of a query schema's integer parameters, for parseQuery. */
export function integerParameters(schema: { properties: Record<string, { type?: string }> }): ReadonlySet<string> {
  return new Set(Object.entries(schema.properties).flatMap(([name, property]) => (property.type === 'integer' ? [name] : [])));
}

/**
 * Checks a query against its schema (the `integers` parameters read as numbers; by default page
 * and pageSize); a bad or unknown parameter is a 400 naming it.
 */
export function parseQuery<T>(validate: Validator<T>, query: unknown, integers: ReadonlySet<string> = PAGING_INTEGERS): T {
  const result = validate(withIntegers(query, integers));
  if (result.ok) return result.value;
  throw invalidQuery(result.violations.map((v) => ({ parameter: v.pointer.replace(/^\//, '').split('/')[0]!, message: v.message })));
}

/** The 400 of a bad query, naming each parameter with what is wrong with it. */
export function invalidQuery(errors: ReadonlyArray<{ parameter: string; message: string }>): HttpError {
  // The detail repeats each message, so a reader of the detail alone sees the hint (allowed values, the name meant).
  const detail = `Invalid query parameter: ${errors.map((e) => `${e.parameter} ${e.message}`).join('; ')}.`;
  return new HttpError(400, 'invalid_query', 'Invalid query parameter', detail, { errors });
}

// A query string holds strings only: the integer parameters' digits become numbers. Anything else
// (`1.5`, `-1`, `abc`, a repeated parameter) stays as sent and fails the schema's `integer`.
function withIntegers(query: unknown, integers: ReadonlySet<string>): unknown {
  if (query === null || typeof query !== 'object') return query;
  return Object.fromEntries(
    Object.entries(query).map(([name, value]) => [name, integers.has(name) && typeof value === 'string' && DIGITS.test(value) ? Number(value) : value]),
  );
}

/** The page asked for, with the defaults applied. */
export function pageOf(query: { page?: number; pageSize?: number }): { page: number; pageSize: number } {
  return { page: query.page ?? pagingParameters.page.default, pageSize: query.pageSize ?? pagingParameters.pageSize.default };
}
