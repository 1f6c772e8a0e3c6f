import type { RequestHandler } from 'express';
import { HttpError } from './http-error';

/**
 * Refuses, before any route or authentication runs, a path with a segment that is not
 * percent-encoded UTF-8 or that decodes to NUL: a 400 problem+json naming the segment as sent.
 * Express decodes path parameters only when a route matches and then throws an unexposed
 * URIError; NUL decodes fine but PostgreSQL stores no U+0000 in text. One check here covers every
 * route, present and future, the dashboard's included.
 */
export const pathGuard: RequestHandler = (req, _res, next) => {
  // A path with no percent sign has nothing to decode (most requests, every GET /events).
  if (!req.path.includes('%')) {
    next();
    return;
  }
  const errors = req.path
    .split('/')
    .map((segment) => ({ segment, message: problemOf(segment) }))
    .filter((e): e is { segment: string; message: string } => e.message !== undefined);
  if (errors.length === 0) {
    next();
    return;
  }
  next(
    new HttpError(400, 'malformed_path', 'Malformed path', `Malformed path segment: ${errors.map((e) => JSON.stringify(e.segment)).join(', ')}.`, { errors }),
  );
};

function problemOf(segment: string): string | undefined {
  if (!segment.includes('%')) return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    return 'is not valid percent-encoded UTF-8';
  }
  return decoded.includes('\u0000') ? 'must not contain NUL (%00)' : undefined;
}
