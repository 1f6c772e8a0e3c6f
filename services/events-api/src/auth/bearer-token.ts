import type { RequestHandler } from 'express';
import { secretMatcher } from '@herald/domain';
import { HttpError } from '../http/http-error';

/** Requires `Authorization: Bearer <token>` equal to `expected` (the admin or the ingest token), compared in constant time. */
export function requireBearerToken(expected: string, realm: string): RequestHandler {
  const matches = secretMatcher(expected);
  return (req, _res, next) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
    if (!match || !matches(match[1]!)) {
      next(
        new HttpError(401, 'unauthorized', 'Unauthorized', 'A valid Authorization: Bearer token is required.', { header: 'authorization' }, {
          'WWW-Authenticate': `Bearer realm="${realm}"`,
        }),
      );
      return;
    }
    next();
  };
}
