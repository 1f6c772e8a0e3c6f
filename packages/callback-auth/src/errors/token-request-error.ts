import { CallbackAuthError } from './callback-auth-error';

/**
 * How a token request failed:
 * - `http_status`: the endpoint answered with a status other than 200 (and not a redirect);
 * - `redirect`: the endpoint answered 3xx; redirects are never followed (the credentials would go along);
 * - `timeout`: no complete answer within the request timeout;
 * - `network`: the connection could not be made or broke (refused, reset, DNS, TLS);
 * - `invalid_response`: HTTP 200 but the body is too large, not JSON, or its fields break the spec.
 */
export type TokenRequestFailureKind = 'http_status' | 'redirect' | 'timeout' | 'network' | 'invalid_response';

/**
 * One OAuth token request failed. The message is built here from fixed phrases, the target id and
 * numbers only: never the URL, the credentials, the response body or a token.
 */
export class TokenRequestError extends CallbackAuthError {
  readonly code = 'CALLBACK_AUTH_TOKEN_REQUEST_FAILED';
  override readonly name = 'TokenRequestError';

  constructor(
    readonly targetId: string,
    readonly kind: TokenRequestFailureKind,
    detail: string,
    /** The HTTP status, for `http_status`, `redirect` and `invalid_response`. */
    readonly status?: number,
    /** The system error code behind a `network` failure, e.g. 'ECONNREFUSED'. */
    readonly causeCode?: string,
  ) {
    super(`Token request for target "${targetId}" failed (${kind}): ${detail}`);
  }
}
