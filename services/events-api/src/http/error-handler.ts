import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from '@herald/logging';
import { HttpError } from './http-error';
import { problemType, sendProblem } from './problem';

/** The one place where errors become HTTP answers. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    if (res.headersSent) {
      next(error);
      return;
    }
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

/** Errors raised by Express itself or body-parser, with their status, become problems too. */
function toHttpError(error: unknown): HttpError | undefined {
  if (error instanceof HttpError) return error;
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
