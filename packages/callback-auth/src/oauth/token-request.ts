import { OutboundRequestError, type OutboundClient, type OutboundResponse } from '@herald/outbound';
import { basicAuthorization, type Credentials } from '../credentials';
import { TokenRequestError } from '../errors/token-request-error';
import { parseTokenResponse, type IssuedToken } from './token-response';

/** One target's token request, built once from its settings. */
export interface TokenRequest {
  readonly targetId: string;
  /** `{authUrl}?grant_type=client_credentials`, see `tokenRequestUrl`. */
  readonly url: string;
  readonly credentials: Credentials;
}

export interface TokenRequestLimits {
  /** Hard limit on the request, from connecting to the last body byte, in ms. */
  readonly timeoutMs: number;
  /** Largest response body read; a larger one is an `invalid_response`. */
  readonly maxResponseBytes: number;
  /** Sends the request (address policy, no redirects, Herald's User-Agent). */
  readonly outbound: OutboundClient;
}

/**
 * Sends the token request exactly as the spec gives it and returns the validated token. One attempt:
 * every failure becomes a `TokenRequestError` and retrying is left to the delivery job.
 */
export async function requestToken(request: TokenRequest, limits: TokenRequestLimits): Promise<IssuedToken> {
  const { targetId, url, credentials } = request;
  let response: OutboundResponse;
  try {
    response = await limits.outbound.send({
      url,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        authorization: basicAuthorization(credentials),
      },
      body: JSON.stringify({ grant_type: 'client_credentials', username: credentials.username, password: credentials.password }),
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
    throw new TokenRequestError(targetId, 'http_status', `the token endpoint answered HTTP ${status}`, status);
  }
  return parseTokenResponse(targetId, status, body);
}

function requestFailure(targetId: string, error: unknown): unknown {
  if (!(error instanceof OutboundRequestError)) return error;
  if (error.kind === 'response_too_large') return new TokenRequestError(targetId, 'invalid_response', error.message, error.status);
  return new TokenRequestError(targetId, error.kind, error.message, error.status, error.causeCode);
}
