import { OutboundRequestError } from './errors/outbound-request-error';

// Certificate and handshake errors, as Node and OpenSSL name them.
const TLS_ERROR = /^(ERR_TLS_|ERR_SSL_|CERT_|EPROTO$)|SELF_SIGNED|UNABLE_TO_(VERIFY|GET)|ALTNAME/;

/**
 * The failure of a request that got no answer. Built from fixed phrases and codes: the error
 * itself is not kept, as it may name the URL (and an axios error carries the whole request).
 */
export function requestFailure(error: unknown, timeoutMs: number, timedOut = false): OutboundRequestError {
  if (timedOut) return new OutboundRequestError('timeout', `no answer within ${timeoutMs} ms`);
  // The guard fails the connection (or the check before it) with its own error.
  if (error instanceof OutboundRequestError) return error;
  const code = errorCode(error);
  if (code !== undefined && TLS_ERROR.test(code)) return new OutboundRequestError('tls', `the TLS connection failed (${code})`, code);
  return new OutboundRequestError('connection', `the connection failed (${code ?? 'unknown error'})`, code);
}

/** The failure of a request whose answer's body did not arrive whole (`partialBody: 'fail'`). */
export function bodyFailure(
  read: { end: string; causeCode?: string },
  status: number,
  limits: { timeoutMs: number; maxResponseBytes: number },
): OutboundRequestError {
  if (read.end === 'too_large') {
    return new OutboundRequestError('response_too_large', `the response body is larger than ${limits.maxResponseBytes} bytes`, undefined, status);
  }
  if (read.end === 'timeout') return new OutboundRequestError('timeout', `no complete answer within ${limits.timeoutMs} ms`, undefined, status);
  return new OutboundRequestError('connection', `the connection broke off during the answer (${read.causeCode ?? 'unknown error'})`, read.causeCode, status);
}

/** The system error code of `error` (e.g. 'ECONNREFUSED'), if it has one. */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}
