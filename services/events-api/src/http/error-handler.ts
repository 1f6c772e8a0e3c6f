import type { ErrorRequestHandler, RequestHandler } from 'express';
import { DuplicateIdError, isDatabaseUnavailable, isStatementCancelled, TargetOwnerNotFoundError } from '@herald/db';
import {
  EventConflictError,
  HeraldError,
  NoTargetError,
  QueueUnavailableError,
  RecoveryRunningError,
  TargetSwitchedOffError,
  UnknownTenantError,
  ValidationError,
} from '@herald/domain';
import { problemType } from '@herald/lifecycle';
import type { Logger } from '@herald/logging';
import { HttpError } from './http-error';
import { sendProblem } from './plain-adapter';
import { traceLogFields } from '@herald/telemetry';
import { requestTrace } from './request-log';

// What a client is told to wait while PostgreSQL is unavailable.
const DATABASE_RETRY_AFTER_SECONDS = 5;
// What a client is told to wait while Redis is unavailable (the portal's pages say the same).
export const QUEUE_RETRY_AFTER_SECONDS = 5;
// What a client is told to wait after PostgreSQL cancelled its query at the statement time limit.
const QUERY_TIMEOUT_RETRY_AFTER_SECONDS = 5;

/** The one place where errors become HTTP answers. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    if (res.headersSent) {
      next(error);
      return;
    }
    if (isDatabaseUnavailable(error))
      logger.warn('database unavailable', { requestId: res.locals.requestId, ...traceLogFields(requestTrace(res)), path: req.path, error });
    if (isStatementCancelled(error))
      logger.warn('query cancelled at its statement time limit', {
        requestId: res.locals.requestId,
        ...traceLogFields(requestTrace(res)),
        method: req.method,
        path: req.path,
      });
    const known = toHttpError(error);
    if (known) {
      res.set(known.headers);
      sendProblem(res, known.toProblem());
      return;
    }
    logger.error('unhandled error', { requestId: res.locals.requestId, ...traceLogFields(requestTrace(res)), method: req.method, path: req.path, error });
    sendProblem(res, { type: problemType('internal'), title: 'Internal Server Error', status: 500 });
  };
}

/** How one class of domain error is answered: its status and title, and what else the problem says. */
interface DomainErrorAnswer<E extends HeraldError> {
  readonly type: abstract new (...args: never[]) => E;
  readonly status: number;
  readonly title: string;
  /** The problem type, where it is not the error's own code. */
  readonly code?: string;
  readonly extensions?: (error: E) => Record<string, unknown>;
  readonly headers?: Record<string, string>;
}

const answer = <E extends HeraldError>(entry: DomainErrorAnswer<E>): DomainErrorAnswer<HeraldError> => entry as unknown as DomainErrorAnswer<HeraldError>;

/**
 * The one table from the errors that shared packages throw (classes with a stable `code`, no HTTP
 * in them) to the events-api's answers.
 */
const DOMAIN_ERROR_ANSWERS: readonly DomainErrorAnswer<HeraldError>[] = [
  answer({
    type: ValidationError,
    status: 400,
    title: 'Invalid request body',
    extensions: (error) => ({ errors: error.violations.map(({ pointer, message }) => ({ pointer, message })) }),
  }),
  answer({ type: UnknownTenantError, status: 422, title: 'Unprocessable Content', extensions: (error) => ({ index: error.index, field: error.field }) }),
  answer({ type: EventConflictError, status: 409, title: 'Conflict', extensions: (error) => ({ index: error.index, eventId: error.eventId }) }),
  answer({ type: DuplicateIdError, status: 409, title: 'Conflict' }),
  answer({ type: TargetOwnerNotFoundError, status: 404, title: 'Not Found', code: 'not_found' }),
  answer({ type: NoTargetError, status: 404, title: 'Not Found' }),
  answer({ type: RecoveryRunningError, status: 409, title: 'Conflict', extensions: (error) => ({ recoveryId: error.recoveryId }) }),
  answer({ type: TargetSwitchedOffError, status: 409, title: 'Conflict', extensions: (error) => ({ disabledReason: error.disabledReason }) }),
  answer({ type: QueueUnavailableError, status: 503, title: 'Service Unavailable', headers: { 'Retry-After': String(QUEUE_RETRY_AFTER_SECONDS) } }),
];

/** Domain errors, and errors raised by Express itself or body-parser, become problems too. */
function toHttpError(error: unknown): HttpError | undefined {
  if (error instanceof HttpError) return error;
  if (error instanceof HeraldError) {
    const known = DOMAIN_ERROR_ANSWERS.find((entry) => error instanceof entry.type);
    if (known) return new HttpError(known.status, known.code ?? error.code, known.title, error.message, known.extensions?.(error) ?? {}, known.headers ?? {});
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
