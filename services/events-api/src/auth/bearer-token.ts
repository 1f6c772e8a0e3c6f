import type { RequestHandler } from 'express';
import { bearerChallenge, bearerMatcher } from '@herald/lifecycle';
import { sendPlain } from '../http/plain-adapter';

/** Requires `Authorization: Bearer <token>` equal to `expected` (the admin or the ingest token), compared in constant time. */
export function requireBearerToken(expected: string, realm: string): RequestHandler {
  const authorized = bearerMatcher(expected);
  const challenge = bearerChallenge(realm);
  return (req, res, next) => {
    if (authorized(req.get('authorization'))) next();
    else sendPlain(res, challenge);
  };
}
