import type { RequestHandler } from 'express';
import { bearerChallenge, bearerMatcher } from '@herald/lifecycle';
import { sendPlain } from '../http/plain-adapter';

/**
 * Requires `Authorization: Bearer <token>` equal to `expected` (the admin or the ingest token),
 * compared in constant time. `detail` is the 401's explanation: it names the token wanted, so a
 * caller holding the other one (or a merchant API key) learns which to send.
 */
export function requireBearerToken(expected: string, realm: string, detail: string): RequestHandler {
  const authorized = bearerMatcher(expected);
  const challenge = bearerChallenge(realm, detail);
  return (req, res, next) => {
    if (authorized(req.get('authorization'))) next();
    else sendPlain(res, challenge);
  };
}
