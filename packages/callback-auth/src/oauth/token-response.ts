import { TokenRequestError } from '../errors/token-request-error';

/** What the service keeps of a valid OAuth token response. */
export interface IssuedToken {
  readonly accessToken: string;
  /** The token's lifetime as the endpoint gave it; undefined when it gave none (the caller's default applies). */
  readonly expiresInSeconds: number | undefined;
}

// Visible ASCII only: the token goes into a header, and a space or control character would split it.
const HEADER_SAFE_TOKEN = /^[\x21-\x7e]+$/;
// A decimal integer written as a string ("3600"), as some token servers send it.
const DECIMAL_DIGITS = /^[0-9]{1,15}$/;

/**
 * Validates the body of an HTTP 200 token response (spec: "OAuth token response").
 * - access_token: non-empty string of visible ASCII characters.
 * - expires_in: optional (RFC 6749 §5.1 only recommends it: oauth2orize's usual setup, among others,
 *   leaves it out); when present, a positive integer, or a string of decimal digits, because servers
 *   that quote it are common and refusing them would stop every callback of that merchant.
 * - token_type: when present, a string equal to "bearer" in any case; when absent, the token is sent
 *   as Bearer anyway, since the spec's callbacks always use Bearer. Another type (e.g. "mac") is refused:
 *   the token would be sent under the wrong scheme.
 * - scope: optional; when present, a string. Not used.
 */
export function parseTokenResponse(targetId: string, status: number, body: string): IssuedToken {
  const invalid = (detail: string) => new TokenRequestError(targetId, 'invalid_response', detail, status);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw invalid('the body is not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw invalid('the body is not a JSON object');
  const fields = parsed as Record<string, unknown>;

  const accessToken = fields['access_token'];
  if (typeof accessToken !== 'string' || accessToken === '') throw invalid('access_token must be a non-empty string');
  if (!HEADER_SAFE_TOKEN.test(accessToken)) throw invalid('access_token holds characters not allowed in a header');

  const expiresIn = fields['expires_in'];
  const expiresInSeconds = expiresIn === undefined ? undefined : positiveInteger(expiresIn);
  if (expiresIn !== undefined && expiresInSeconds === undefined) throw invalid('expires_in must be a positive integer');

  const tokenType = fields['token_type'];
  if (tokenType !== undefined && (typeof tokenType !== 'string' || tokenType.toLowerCase() !== 'bearer')) {
    throw invalid('token_type must be "bearer"');
  }
  const scope = fields['scope'];
  if (scope !== undefined && typeof scope !== 'string') throw invalid('scope must be a string');

  return { accessToken, expiresInSeconds };
}

function positiveInteger(value: unknown): number | undefined {
  const number = typeof value === 'string' && DECIMAL_DIGITS.test(value) ? Number(value) : value;
  return typeof number === 'number' && Number.isSafeInteger(number) && number > 0 ? number : undefined;
}
