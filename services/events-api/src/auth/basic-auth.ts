import type { RequestHandler } from 'express';
import { secretMatcher } from '@herald/domain';
import type { FailedAuthThrottle } from '@herald/lifecycle';
import { peerAddress } from '../http/client-address';
import { HttpError } from '../http/http-error';
import { sendPlain } from '../http/plain-adapter';

/**
 * Requires `Authorization: Basic base64(username:password)` with the given credentials, for pages
 * people open in a browser (the Bull dashboard). Without them: 401 with a `WWW-Authenticate: Basic`
 * challenge, so the browser asks for them. User name and password are both compared, in constant
 * time, whichever is wrong, so an attacker cannot tell a right user name from a wrong one. Wrong
 * credentials count as a failed authentication of the client's address; none (a browser's first
 * visit, before it asks for them) do not.
 */
export function requireBasicAuth(credentials: { username: string; password: string }, realm: string, failedAuth: FailedAuthThrottle): RequestHandler {
  const usernameMatches = secretMatcher(credentials.username);
  const passwordMatches = secretMatcher(credentials.password);
  return (req, res, next) => {
    const authorization = req.get('authorization');
    const refused = authorization === undefined ? undefined : failedAuth.refusal(peerAddress(req));
    if (refused) {
      sendPlain(res, refused);
      return;
    }
    const given = parseBasic(authorization);
    const userOk = usernameMatches(given?.username ?? '');
    const passwordOk = passwordMatches(given?.password ?? '');
    if (!given || !userOk || !passwordOk) {
      if (authorization !== undefined) failedAuth.failed(peerAddress(req));
      next(
        new HttpError(
          401,
          'unauthorized',
          'Unauthorized',
          'Valid HTTP Basic credentials are required.',
          { header: 'authorization' },
          {
            'WWW-Authenticate': `Basic realm="${realm}", charset="UTF-8"`,
          },
        ),
      );
      return;
    }
    next();
  };
}

function parseBasic(header: string | undefined): { username: string; password: string } | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i.exec(header ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  // RFC 7617: the user-id ends at the first colon; the password may hold colons.
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
