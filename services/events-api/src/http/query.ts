import type { Validator } from '@herald/domain';
import { HttpError } from './http-error';

/** Most records one page may hold. */
export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 20;

/** The `page` and `pageSize` query parameters, as JSON Schema properties of strings (the query string's own type). */
export const pagingParameters = {
  page: { type: 'string', pattern: '^[1-9][0-9]{0,8}$', description: 'Page number to return, from 1. Default 1.' },
  pageSize: {
    type: 'string',
    pattern: `^([1-9][0-9]?|${MAX_PAGE_SIZE})$`,
    description: `Records per page, 1 to ${MAX_PAGE_SIZE}. Default ${DEFAULT_PAGE_SIZE}.`,
  },
} as const;

/** Checks a query against its schema; a bad or unknown parameter is a 400 naming it. */
export function parseQuery<T>(validate: Validator<T>, query: unknown): T {
  const result = validate(query);
  if (result.ok) return result.value;
  const errors = result.violations.map((v) => ({ parameter: v.pointer.replace(/^\//, '').split('/')[0], message: v.message }));
  // The detail repeats each message, so a reader of the detail alone sees the hint (allowed values, the name meant).
  const detail = `Invalid query parameter: ${errors.map((e) => `${e.parameter} ${e.message}`).join('; ')}.`;
  throw new HttpError(400, 'invalid_query', 'Invalid query parameter', detail, { errors });
}

/** The page asked for, with the defaults applied. */
export function pageOf(query: { page?: string; pageSize?: string }): { page: number; pageSize: number } {
  return {
    page: query.page === undefined ? 1 : Number(query.page),
    pageSize: query.pageSize === undefined ? DEFAULT_PAGE_SIZE : Number(query.pageSize),
  };
}
