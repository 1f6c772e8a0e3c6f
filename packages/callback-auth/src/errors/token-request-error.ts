import type { OutboundFailureKind } from '@herald/outbound';
import type { OAuthErrorResponse } from '../oauth/token-error-response';
import { CallbackAuthError } from './callback-auth-error';

/**
 * How a token request failed:
 * - `http_status`: the endpoint answered with a status other than 200 (and not a redirect);
 * - `redirect`: the endpoint answered 3xx; redirects are never followed (the credentials would go along);
 * - `invalid_response`: HTTP 200 but the body is too large, not JSON, or its fields break the spec;
 * - `timeout`, `connection`, `tls`, `address_refused`: the request got no complete answer, as the
 *   outbound client names it (OutboundFailureKind).
 */
export type TokenRequestFailureKind = 'http_status' | 'redirect' | 'invalid_response' | Exclude<OutboundFailureKind, 'response_too_large'>;

/**
 * One OAuth token request failed. The message is built from fixed phrases, the target id, numbers
 * and system error codes (and, for `address_refused`, the host and its address), and, for an
 * `http_status` whose body is an RFC 6749 §5.2 error, its `error` and `error_description`, bounded
 * and redacted: never the URL's path or query, the credentials, the rest of the body or a token.
 */
export class TokenRequestError extends CallbackAuthError {
  readonly code = 'callback_auth_token_request_failed';
  override readonly name = 'TokenRequestError';

  constructor(
    readonly targetId: string,
    readonly kind: TokenRequestFailureKind,
    /** What went wrong, without the target: the message's last part, e.g. `the token endpoint answered HTTP 401`. */
    readonly detail: string,
    /** The HTTP status, for `http_status`, `redirect` and `invalid_response`. */
    readonly status?: number,
    /** The system error code behind a `connection` or `tls` failure, e.g. 'ECONNREFUSED'. */
    readonly causeCode?: string,
    /** For `http_status`: the RFC 6749 error the endpoint answered with, when its body was one. */
    readonly oauthError?: OAuthErrorResponse,
  ) {
    super(`Token request for target "${targetId}" failed (${kind}): ${detail}`);
  }
}
