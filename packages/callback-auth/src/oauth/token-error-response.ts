import { redactForeignText } from '@herald/logging';

/** What a token endpoint said was wrong, per RFC 6749 §5.2: not secret, and what a merchant needs to fix it. */
export interface OAuthErrorResponse {
  /** The error code, e.g. `invalid_client`. */
  readonly error: string;
  /** The human-readable explanation, when the endpoint gave one. */
  readonly description?: string;
}

// RFC 6749 §5.2 allows only these characters in both fields (%x20-21 / %x23-5B / %x5D-7E); a value
// with others is not an RFC 6749 error, and is left out rather than trusted into a log line.
const ERROR_CHARACTERS = /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/;
const MAX_ERROR_LENGTH = 64;
const MAX_DESCRIPTION_LENGTH = 300;
// The codes RFC 6749 §5.2 defines: words of the protocol, never a secret, shown as they came even
// when a client's password happens to contain one (a secret `client` would mask `invalid_client`).
const REGISTERED_ERRORS: ReadonlySet<string> = new Set([
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
]);

/**
 * The RFC 6749 §5.2 error of a failed token response's body, or undefined when the body is not
 * one. Both fields are cut to a bounded length and pass through the log redaction, with the
 * target's `knownSecrets` masked wherever the endpoint echoed them.
 */
export function parseTokenErrorResponse(body: string, knownSecrets: readonly string[]): OAuthErrorResponse | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const { error, error_description: description } = parsed as Record<string, unknown>;
  if (typeof error !== 'string' || !ERROR_CHARACTERS.test(error)) return undefined;
  // Each field is a whole JSON string, never cut off by a size limit: only a whole secret in it is one.
  const clean = (value: string, max: number) => redactForeignText(value, knownSecrets, { mayBeCutOff: false }).slice(0, max);
  return {
    error: REGISTERED_ERRORS.has(error) ? error : clean(error, MAX_ERROR_LENGTH),
    ...(typeof description === 'string' && ERROR_CHARACTERS.test(description) ? { description: clean(description, MAX_DESCRIPTION_LENGTH) } : {}),
  };
}
