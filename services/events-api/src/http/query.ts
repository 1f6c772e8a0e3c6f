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

const DIGITS = /^[0-9]+$/;

/** An integer query parameter as its schema bounds it. */
interface IntegerParameter {
  minimum: number;
  maximum: number;
  /** What an absent parameter means; none when absent means "not set". */
  default?: number;
}

/** A query schema's integer parameters, by name, for parseQuery. */
export function integerParameters(schema: { properties: Record<string, { type?: string }> }): Readonly<Record<string, IntegerParameter>> {
  return Object.fromEntries(
    Object.entries(schema.properties).flatMap(([name, property]) => (property.type === 'integer' ? [[name, property as unknown as IntegerParameter]] : [])),
  );
}

interface ParameterError {
  parameter: string;
  message: string;
}

/**
 * Checks a query against its schema (the `integers` parameters read as numbers; by default page and
 * pageSize); a bad or unknown parameter is a 400 naming it. A repeated parameter and an integer
 * parameter that is not a whole number in range get a message of their own, in the words of the
 * query string (`page=-1`, not the schema's "must be integer"), saying what to send instead.
 */
export function parseQuery<T>(validate: Validator<T>, query: unknown, integers: Readonly<Record<string, IntegerParameter>> = pagingParameters): T {
  const entries = query !== null && typeof query === 'object' ? Object.entries(query) : [];
  const own = entries.flatMap(([name, value]) => {
    const error = parameterError(name, value, integers);
    return error ? [error] : [];
  });
  const checked = Object.fromEntries(entries.filter(([name]) => !own.some((e) => e.parameter === name)));
  const result = validate(withIntegers(checked, integers));
  if (result.ok && own.length === 0) return result.value;
  const violations = result.ok ? [] : result.violations.map((v) => ({ parameter: v.pointer.replace(/^\//, '').split('/')[0]!, message: v.message }));
  // In the order the parameters were sent, each named once.
  const order = entries.map(([name]) => name);
  throw invalidQuery([...own, ...violations].sort((a, b) => order.indexOf(a.parameter) - order.indexOf(b.parameter)));
}

/** The 400 of a bad query, naming each parameter with what is wrong with it. */
export function invalidQuery(errors: readonly ParameterError[]): HttpError {
  // The detail repeats each message, so a reader of the detail alone sees the hint (allowed values, the name meant).
  const detail = `Invalid query parameter: ${errors.map((e) => `${e.parameter} ${e.message}`).join('; ')}.`;
  return new HttpError(400, 'invalid_query', 'Invalid query parameter', detail, { errors });
}

function parameterError(name: string, value: unknown, integers: Readonly<Record<string, IntegerParameter>>): ParameterError | undefined {
  if (Array.isArray(value)) {
    return { parameter: name, message: `was given ${value.length} times (${value.map((v) => `${name}=${String(v)}`).join('&')}): give it once` };
  }
  const integer = Object.hasOwn(integers, name) ? integers[name] : undefined;
  if (!integer || typeof value !== 'string') return undefined;
  const { minimum, maximum, default: fallback } = integer;
  const range = `a whole number from ${minimum} to ${maximum}`;
  if (value === '') return { parameter: name, message: `is empty: give ${range}, or leave ${name} out${fallback === undefined ? '' : ` for ${fallback}`}` };
  if (!DIGITS.test(value)) {
    const reason = /^-\d+$/.test(value) ? 'a negative number' : /^\d*\.\d+$/.test(value) ? 'not a whole number' : 'not a number';
    return { parameter: name, message: `must be ${range}; got ${JSON.stringify(value)}, ${reason}` };
  }
  const number = Number(value);
  if (number < minimum || number > maximum) return { parameter: name, message: `must be ${range}; got ${value}` };
  return undefined;
}

// A query string holds strings only: the integer parameters' digits become numbers.
function withIntegers(query: Record<string, unknown>, integers: Readonly<Record<string, IntegerParameter>>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(query).map(([name, value]) => [
      name,
      Object.hasOwn(integers, name) && typeof value === 'string' && DIGITS.test(value) ? Number(value) : value,
    ]),
  );
}

/** The page asked for, with the defaults applied. */
export function pageOf(query: { page?: number; pageSize?: number }): { page: number; pageSize: number } {
  return { page: query.page ?? pagingParameters.page.default, pageSize: query.pageSize ?? pagingParameters.pageSize.default };
}
