import type { RequestHandler } from 'express';
import { bearerGuard, type FailedAuthThrottle } from '@herald/lifecycle';
import { peerAddress } from '../http/client-address';
import { sendPlain } from '../http/plain-adapter';

/**
 * Requires `Authorization: Bearer <token>` equal to `expected` (the admin or the ingest token),
 * compared in constant time, with the check every guessable bearer token of Herald gets
 * (bearerGuard: a wrong one counts against the client's address, an address past its failures
 * gets 429). `detail` is the 401's explanation: it names the token wanted, so a caller holding the
 * other one (or a merchant API key) learns which to send.
 */
export function requireBearerToken(expected: string, realm: string, detail: string, failedAuth: FailedAuthThrottle): RequestHandler {
  const guard = bearerGuard(expected, realm, failedAuth, detail);
  return (req, res, next) => {
    const refused = guard({ authorization: req.get('authorization'), clientAddress: peerAddress(req) });
    if (refused) sendPlain(res, refused);
    else next();
  };
}
