import type { ErrorRequestHandler, RequestHandler } from 'express';
import { DuplicateIdError, isDatabaseUnavailable, isStatementCancelled } from '@herald/db';
import { EventConflictError, QueueUnavailableError, UnknownTenantError, ValidationError } from '@herald/domain';
import { problemType } from '@herald/lifecycle';
import type { Logger } from '@herald/logging';
import { HttpError } from './http-error';
import { sendProblem } from './plain-adapter';

// What a client is told to wait while PostgreSQL is unavailable.
const DATABASE_RETRY_AFTER_SECONDS = 5;
// What a client is told to wait while Redis is unavailable.
const QUEUE_RETRY_AFTER_SECONDS = 5;
// What a client is told to wait after PostgreSQL cancelled its query at the statement time limit.
const QUERY_TIMEOUT_RETRY_AFTER_SECONDS = 5;

/** The one place where errors become HTTP answers. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    if (res.headersSent) {
      next(error);
      return;
    }
    if (isDatabaseUnavailable(error)) logger.warn('database unavailable', { requestId: res.locals.requestId, path: req.path, error });
    if (isStatementCancelled(error))
      logger.warn('query cancelled at its statement time limit', { requestId: res.locals.requestId, method: req.method, path: req.path });
    const known = toHttpError(error);
    if (known) {
      res.set(known.headers);
      sendProblem(res, known.toProblem());
      return;
    }
    logger.error('unhandled error', { requestId: res.locals.requestId, method: req.method, path: req.path, error });
    sendProblem(res, { type: problemType('internal'), title: 'Internal Server Error', status: 500 });
  };
}

/** Domain errors, and errors raised by Express itself or body-parser, become problems too. */
function toHttpError(error: unknown): HttpError | undefined {
  if (error instanceof HttpError) return error;
  if (error instanceof ValidationError) {
    return new HttpError(400, error.code, 'Invalid request body', error.message, {
      errors: error.violations.map(({ pointer, message }) => ({ pointer, message })),
    });
  }
  if (error instanceof UnknownTenantError) {
    return new HttpError(422, error.code, 'Unprocessable Content', error.message, { index: error.index, field: error.field });
  }
  if (error instanceof EventConflictError) {
    return new HttpError(409, error.code, 'Conflict', error.message, { index: error.index, eventId: error.eventId });
  }
  if (error instanceof DuplicateIdError) return new HttpError(409, error.code, 'Conflict', error.message);
  if (error instanceof QueueUnavailableError) {
    return new HttpError(503, error.code, 'Service Unavailable', error.message, {}, { 'Retry-After': String(QUEUE_RETRY_AFTER_SECONDS) });
  }
  if (isDatabaseUnavailable(error)) {
    return new HttpError(
      503,
      'database_unavailable',
      'Service Unavailable',
      'The database is unavailable; retry later.',
      {},
      {
        'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS),
      },
    );
  }
  // A 503, not a 4xx: the same query may pass when the database is less busy. The detail says how
  // to make it cheaper, since a query that is simply too broad will be cancelled again.
  if (isStatementCancelled(error)) {
    return new HttpError(
      503,
      'query_timeout',
      'Service Unavailable',
      "The database cancelled this request's query at its time limit. Retry later; for GET /events, a narrower query (a shorter createdFrom to createdTo range, a shallower page) finishes sooner.",
      {},
      { 'Retry-After': String(QUERY_TIMEOUT_RETRY_AFTER_SECONDS) },
    );
  }
  const parserError = error as { type?: string; status?: number; expose?: boolean; message?: string };
  if (parserError?.type === 'entity.parse.failed') {
    return new HttpError(400, 'malformed_json', 'Malformed JSON', 'The request body is not valid JSON.');
  }
  if (parserError?.type === 'entity.too.large') {
    return new HttpError(413, 'body_too_large', 'Request body too large');
  }
  if (typeof parserError?.status === 'number' && parserError.status >= 400 && parserError.status < 500 && parserError.expose) {
    return new HttpError(parserError.status, 'bad_request', 'Bad Request', parserError.message);
  }
  return undefined;
}

/** Answers routes that do not exist. */
export const notFound: RequestHandler = (req, _res, next) => {
  next(new HttpError(404, 'not_found', 'Not Found', `No route for ${req.method} ${req.path}.`));
};
