import type { LookupFunction } from 'node:net';
import axios, { AxiosError, type AxiosRequestConfig } from 'axios';
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
  readonly timeoutMs: number;
  readonly maxResponseBytes: number;
  /** Resolves the host for the connection (see AuthDependencies.lookup); dns.lookup when undefined. */
  readonly lookup?: LookupFunction | undefined;
}

// The body is three short strings; a larger one means absurd settings, not a token request.
const MAX_REQUEST_BYTES = 16 * 1024;

/**
 * Sends the token request exactly as the spec gives it and returns the validated token. One attempt:
 * every failure becomes a `TokenRequestError` and retrying is left to the delivery job.
 */
export async function requestToken(request: TokenRequest, limits: TokenRequestLimits): Promise<IssuedToken> {
  const { targetId, url, credentials } = request;
  let response;
  try {
    response = await axios.request<string>({
      method: 'POST',
      url,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        authorization: basicAuthorization(credentials),
      },
      data: JSON.stringify({
        grant_type: 'client_credentials',
        username: credentials.username,
        password: credentials.password,
      }),
      adapter: 'http',
      // axios's timeout stops at the response headers and then only watches idle sockets; the signal is
      // a hard deadline for a server that drips its body.
      timeout: limits.timeoutMs,
      signal: AbortSignal.timeout(limits.timeoutMs),
      maxRedirects: 0,
      maxContentLength: limits.maxResponseBytes,
      maxBodyLength: MAX_REQUEST_BYTES,
      responseType: 'text',
      // The body is parsed by parseTokenResponse, so that bad JSON is told apart from bad fields.
      transformResponse: (data: unknown) => data,
      validateStatus: () => true,
      // A proxy from the environment would connect in our place, out of reach of `lookup`'s address check.
      proxy: false,
      // Node's lookup signature, which axios hands to http.request unchanged; its own type is narrower.
      ...(limits.lookup ? { lookup: limits.lookup as AxiosRequestConfig['lookup'] } : {}),
    });
  } catch (error) {
    throw requestFailure(targetId, error, limits);
  }

  const { status, data } = response;
  if (status >= 300 && status < 400) {
    throw new TokenRequestError(targetId, 'redirect', `the token endpoint redirected (HTTP ${status}); redirects are not followed`, status);
  }
  if (status !== 200) {
    throw new TokenRequestError(targetId, 'http_status', `the token endpoint answered HTTP ${status}`, status);
  }
  return parseTokenResponse(targetId, status, typeof data === 'string' ? data : '');
}

// Built from fixed phrases: the axios error is not kept as `cause`, as its config holds the credentials.
function requestFailure(targetId: string, error: unknown, limits: TokenRequestLimits): TokenRequestError {
  const code = (error as { code?: unknown } | null)?.code;
  const causeCode = typeof code === 'string' ? code : undefined;
  if (causeCode === AxiosError.ECONNABORTED || causeCode === AxiosError.ETIMEDOUT || causeCode === AxiosError.ERR_CANCELED) {
    return new TokenRequestError(targetId, 'timeout', `no complete answer within ${limits.timeoutMs} ms`, undefined, causeCode);
  }
  if (causeCode === AxiosError.ERR_BAD_RESPONSE && error instanceof AxiosError && error.message.startsWith('maxContentLength')) {
    return new TokenRequestError(
      targetId,
      'invalid_response',
      `the response body is larger than ${limits.maxResponseBytes} bytes`,
      error.response?.status,
    );
  }
  return new TokenRequestError(targetId, 'network', `the connection failed (${causeCode ?? 'unknown error'})`, undefined, causeCode);
}
