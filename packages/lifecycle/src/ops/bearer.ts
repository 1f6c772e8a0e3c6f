import { secretMatcher } from '@herald/domain';
import type { FailedAuthThrottle } from '../auth/failed-auth-throttle';
import type { PlainRequest, PlainResponse } from './plain-http';
import { problemResponse, problemType } from './problem';

/**
 * Whether an `Authorization` header carries `Bearer <expected>`; the token is compared in constant
 * time, the scheme name case-insensitively (RFC 9110).
 */
function bearerMatcher(expected: string): (authorization: string | undefined) => boolean {
  const matches = secretMatcher(expected);
  return (authorization) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    return match !== null && matches(match[1]!);
  };
}

/**
 * The 401 answer to a request without the right bearer token, with its `WWW-Authenticate` challenge;
 * `detail` should say which token is wanted and where it comes from.
 */
function bearerChallenge(realm: string, detail = 'A valid Authorization: Bearer token is required.'): PlainResponse {
  return problemResponse(
    {
      type: problemType('unauthorized'),
      title: 'Unauthorized',
      status: 401,
      detail,
      header: 'authorization',
    },
    { 'WWW-Authenticate': `Bearer realm="${realm}"` },
  );
}

/**
 * The check of one bearer token, as every guessable bearer token of Herald is checked (the
 * events-api's admin and ingest tokens, METRICS_TOKEN on both services): undefined when the
 * request carries `Bearer <expected>`; otherwise the answer to send. A missing Authorization is a
 * 401 challenge and is no guess; from an address that has used up its failed authentications,
 * any Authorization is a 429 (the right token too, so guessing on learns nothing); a wrong one is
 * a 401 challenge and counts as a failure of the address. `detail` is the 401's explanation.
 */
export function bearerGuard(
  expected: string,
  realm: string,
  failedAuth: FailedAuthThrottle,
  detail?: string,
): (request: Pick<PlainRequest, 'authorization' | 'clientAddress'>) => PlainResponse | undefined {
  const authorized = bearerMatcher(expected);
  const challenge = bearerChallenge(realm, detail);
  return ({ authorization, clientAddress }) => {
    if (authorization === undefined) return challenge;
    const refusal = failedAuth.refusal(clientAddress);
    if (refusal) return refusal;
    if (authorized(authorization)) return undefined;
    failedAuth.failed(clientAddress);
    return challenge;
  };
}
