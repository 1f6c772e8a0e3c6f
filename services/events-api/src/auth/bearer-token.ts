import type { RequestHandler } from 'express';
import { bearerChallenge, bearerMatcher } from '@herald/lifecycle';
import { sendPlain } from '../http/plain-adapter';
import type { FailedAuthThrottle } from './failed-auth-throttle';

/**
 * Requires `Authorization: Bearer <token>` equal to `expected` (the admin or the ingest token),
 * compared in constant time. `detail` is the 401's explanation: it names the token wanted, so a
 * caller holding the other one (or a merchant API key) learns which to send. A wrong
 * Authorization counts as a failed authentication of the client's address (a missing one does not).
 */
export function requireBearerToken(expected: string, realm: string, detail: string, failedAuth: FailedAuthThrottle): RequestHandler {
  const authorized = bearerMatcher(expected);
  const challenge = bearerChallenge(realm, detail);
  return (req, res, next) => {
    const authorization = req.get('authorization');
    if (authorization === undefined) {
      sendPlain(res, challenge);
      return;
    }
    failedAuth.check(req);
    if (authorized(authorization)) {
      next();
      return;
    }
    failedAuth.failed(req);
    sendPlain(res, challenge);
  };
}
