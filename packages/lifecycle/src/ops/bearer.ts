import { secretMatcher } from '@herald/domain';
import type { PlainResponse } from './plain-http';
import { problemResponse, problemType } from './problem';

/**
 * Whether an `Authorization` header carries `Bearer <expected>`; the token is compared in constant
 * time, the scheme name case-insensitively (RFC 9110).
 */
export function bearerMatcher(expected: string): (authorization: string | undefined) => boolean {
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
export function bearerChallenge(realm: string, detail = 'A valid Authorization: Bearer token is required.'): PlainResponse {
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
