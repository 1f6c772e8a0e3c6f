import { OAUTH_SCOPE_PATTERN, OAUTH_TOKEN_REQUESTS, type OAuthTokenRequest } from '@herald/domain';
import { OutboundRequestError, type OutboundClient, type OutboundResponse } from '@herald/outbound';
import { basicAuthorization, requireCredentials, type Credentials } from '../credentials';
import { AuthConfigurationError } from '../errors/auth-configuration-error';
import { TokenRequestError } from '../errors/token-request-error';
import type { TargetAuthSettings, TokenRequestOutcome } from '../types';
import { tokenRequestUrl } from './token-endpoint';
import { parseTokenErrorResponse } from './token-error-response';
import { parseTokenResponse, type IssuedToken } from './token-response';

/** One target's token request, built once from its settings. */
export interface TokenRequest {
  readonly targetId: string;
  /** How the request is written: the spec's, or RFC 6749's with the credentials in a Basic header or in the body. */
  readonly style: OAuthTokenRequest;
  /** See `tokenRequestUrl`: with `?grant_type=client_credentials` for the spec's request. */
  readonly url: string;
  readonly credentials: Credentials;
  /** Asked for in either request when set. */
  readonly scope: string | undefined;
}

const SCOPE = new RegExp(OAUTH_SCOPE_PATTERN);

/** The token request of an OAuth target's settings; throws AuthConfigurationError when they are unusable. */
export function buildTokenRequest(settings: TargetAuthSettings): TokenRequest {
  const { targetId, tokenRequest: style = 'spec', scope } = settings;
  if (!(OAUTH_TOKEN_REQUESTS as readonly unknown[]).includes(style)) {
    throw new AuthConfigurationError('tokenRequest', `Target "${targetId}": tokenRequest must be one of ${OAUTH_TOKEN_REQUESTS.join(', ')}`);
  }
  if (scope !== undefined && (typeof scope !== 'string' || !SCOPE.test(scope))) {
    throw new AuthConfigurationError('scope', `Target "${targetId}": scope must be scope tokens separated by single spaces`);
  }
  return { targetId, style, url: tokenRequestUrl(targetId, settings.authUrl, style), credentials: requireCredentials(settings), scope };
}

export interface TokenRequestLimits {
  /** Hard limit on the request, from connecting to the last body byte, in ms. */
  readonly timeoutMs: number;
  /** Largest response body read; a larger one is an `invalid_response`. */
  readonly maxResponseBytes: number;
  /** Sends the request (address policy, no redirects, Herald's User-Agent). */
  readonly outbound: OutboundClient;
  /** Told how the request ended (AuthDependencies.onTokenRequest). */
  readonly onOutcome?: ((outcome: TokenRequestOutcome) => void) | undefined;
}

/**
 * Sends the token request and returns the validated token. One attempt: every failure becomes a
 * `TokenRequestError` and retrying is left to the delivery job.
 */
export async function requestToken(request: TokenRequest, limits: TokenRequestLimits): Promise<IssuedToken> {
  try {
    const issued = await sendTokenRequest(request, limits);
    limits.onOutcome?.('issued');
    return issued;
  } catch (error) {
    limits.onOutcome?.(error instanceof TokenRequestError ? error.kind : 'unexpected');
    throw error;
  }
}

async function sendTokenRequest(request: TokenRequest, limits: TokenRequestLimits): Promise<IssuedToken> {
  const { targetId, url } = request;
  let response: OutboundResponse;
  try {
    response = await limits.outbound.send({
      url,
      method: 'POST',
      ...tokenRequestMessage(request),
      timeoutMs: limits.timeoutMs,
      maxResponseBytes: limits.maxResponseBytes,
      // A token cut short is no token: a body past the limit, stalled or broken off fails the request.
      partialBody: 'fail',
    });
  } catch (error) {
    throw requestFailure(targetId, error);
  }

  const { status, body } = response;
  if (status >= 300 && status < 400) {
    throw new TokenRequestError(targetId, 'redirect', `the token endpoint redirected (HTTP ${status}); redirects are not followed`, status);
  }
  if (status !== 200) {
    // The merchant's secret is masked wherever the endpoint may have echoed it into its error.
    const oauthError = parseTokenErrorResponse(body, [request.credentials.password]);
    const said = oauthError === undefined ? '' : `: ${oauthError.error}${oauthError.description === undefined ? '' : ` (${oauthError.description})`}`;
    throw new TokenRequestError(targetId, 'http_status', `the token endpoint answered HTTP ${status}${said}`, status, undefined, oauthError);
  }
  return parseTokenResponse(targetId, status, body);
}

/** The headers and body of the request, in the style the target asks for. */
function tokenRequestMessage({ style, credentials, scope }: TokenRequest): { headers: Record<string, string>; body: string } {
  if (style === 'form') {
    // RFC 6749 §4.4.2 and §2.3.1: the grant in a form-encoded body; the client id and secret each
    // form-encoded before they are joined and Base64-encoded, so that a ':' or '%' in them survives.
    const form = new URLSearchParams({ grant_type: 'client_credentials', ...(scope === undefined ? {} : { scope }) });
    return {
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        authorization: basicAuthorization({ username: formEncode(credentials.username), password: formEncode(credentials.password) }),
      },
      body: form.toString(),
    };
  }
  if (style === 'client_secret_post') {
    // RFC 6749 §2.3.1's alternative: the credentials as form fields, encoded once by the form as
    // every server decodes it; no Authorization header (§2.3: one method per request).
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: credentials.username,
      client_secret: credentials.password,
      ...(scope === undefined ? {} : { scope }),
    });
    return { headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }, body: form.toString() };
  }
  // The spec's request, exactly: scope only joins the body when the target has one.
  return {
    headers: {
      'content-type': 'application/json',
      accept: 'application/json',
      authorization: basicAuthorization(credentials),
    },
    body: JSON.stringify({
      grant_type: 'client_credentials',
      username: credentials.username,
      password: credentials.password,
      ...(scope === undefined ? {} : { scope }),
    }),
  };
}

/**
 * Whether the form request's Basic header differs from the plain one for these credentials: they
 * hold characters that RFC 6749 §2.3.1 form-encodes (a space, '%', '+', '&', '=', non-ASCII, ...),
 * which a server that does not form-decode the header (many do not) reads as other credentials.
 */
export function formEncodingChanges({ username, password }: Credentials): boolean {
  return formEncode(username) !== username || formEncode(password) !== password;
}

/** application/x-www-form-urlencoded encoding of one value (RFC 6749 Appendix B), as a form serialiser writes it. */
function formEncode(value: string): string {
  return new URLSearchParams([['', value]]).toString().slice(1);
}

function requestFailure(targetId: string, error: unknown): unknown {
  if (!(error instanceof OutboundRequestError)) return error;
  if (error.kind === 'response_too_large') return new TokenRequestError(targetId, 'invalid_response', error.message, error.status);
  return new TokenRequestError(targetId, error.kind, error.message, error.status, error.causeCode);
}
