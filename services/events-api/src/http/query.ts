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

const INTEGER_PARAMETERS: ReadonlySet<string> = new Set(Object.keys(pagingParameters));
const DIGITS = /^[0-9]+$/;

interface ParameterError {
  parameter: string;
  message: string;
}

/**
 * Checks a query against its schema (integer parameters read as numbers); a bad or unknown
 * parameter is a 400 naming it. A repeated parameter and a paging parameter that is not a whole
 * number in range get a message of their own, in the words of the query string (`page=-1`, not
 * the schema's "must be integer"), saying what to send instead.
 */
export function parseQuery<T>(validate: Validator<T>, query: unknown): T {
  const entries = query !== null && typeof query === 'object' ? Object.entries(query) : [];
  const own = entries.flatMap(([name, value]) => {
    const error = parameterError(name, value);
    return error ? [error] : [];
  });
  const checked = Object.fromEntries(entries.filter(([name]) => !own.some((e) => e.parameter === name)));
  const result = validate(withIntegers(checked));
  if (result.ok && own.length === 0) return result.value;
  const violations = result.ok ? [] : result.violations.map((v) => ({ parameter: v.pointer.replace(/^\//, '').split('/')[0]!, message: v.message }));
  // In the order the parameters were sent, each named once.
  const order = entries.map(([name]) => name);
  const errors = [...own, ...violations].sort((a, b) => order.indexOf(a.parameter) - order.indexOf(b.parameter));
  // The detail repeats each message, so a reader of the detail alone sees the hint (allowed values, the name meant).
  const detail = `Invalid query parameter: ${errors.map((e) => `${e.parameter} ${e.message}`).join('; ')}.`;
  throw new HttpError(400, 'invalid_query', 'Invalid query parameter', detail, { errors });
}

function parameterError(name: string, value: unknown): ParameterError | undefined {
  if (Array.isArray(value)) {
    return { parameter: name, message: `was given ${value.length} times (${value.map((v) => `${name}=${String(v)}`).join('&')}): give it once` };
  }
  if (!INTEGER_PARAMETERS.has(name) || typeof value !== 'string') return undefined;
  const { minimum, maximum, default: fallback } = pagingParameters[name as keyof typeof pagingParameters];
  const range = `a whole number from ${minimum} to ${maximum}`;
  if (value === '') return { parameter: name, message: `is empty: give ${range}, or leave ${name} out for ${fallback}` };
  if (!DIGITS.test(value)) {
    const reason = /^-\d+$/.test(value) ? 'a negative number' : /^\d*\.\d+$/.test(value) ? 'not a whole number' : 'not a number';
    return { parameter: name, message: `must be ${range}; got ${JSON.stringify(value)}, ${reason}` };
  }
  const number = Number(value);
  if (number < minimum || number > maximum) return { parameter: name, message: `must be ${range}; got ${value}` };
  return undefined;
}

// A query string holds strings only: the integer parameters' digits become numbers.
function withIntegers(query: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(query).map(([name, value]) => [
      name,
      INTEGER_PARAMETERS.has(name) && typeof value === 'string' && DIGITS.test(value) ? Number(value) : value,
    ]),
  );
}

/** The page asked for, with the defaults applied. */
export function pageOf(query: { page?: number; pageSize?: number }): { page: number; pageSize: number } {
  return { page: query.page ?? pagingParameters.page.default, pageSize: query.pageSize ?? pagingParameters.pageSize.default };
}
