import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Readable } from 'node:stream';
import { RefusedAddressError, type ConnectGuard } from '@herald/outbound';
import { CallbackRequestError } from './errors/callback-request-error';

/** One callback POST: where, the exact bytes, and every header. */
export interface CallbackRequest {
  url: string;
  /** The event's JSON, serialised once so that every POST of an attempt sends the same bytes. */
  body: string;
  /** Lower-case names. */
  headers: Record<string, string>;
}

/** The merchant's answer. */
export interface CallbackResponse {
  status: number;
  /** At most CALLBACK_RESPONSE_MAX_BYTES of the body, as UTF-8 text. */
  body: string;
  /** The wait a 429 or 503 asked for with Retry-After (seconds or an HTTP date), in ms. */
  retryAfterMs?: number;
}

export interface CallbackSenderOptions {
  /** Hard limit on one POST, from connecting to the last body byte read, in ms. */
  timeoutMs: number;
  /** Most bytes of the answer's body read; the connection is dropped once they are in. */
  responseMaxBytes: number;
  /** The SSRF policy at send time: IP-address hosts are checked before, host names while connecting. */
  guard: ConnectGuard;
}

/** Sends one POST and returns the answer, whatever its status; throws CallbackRequestError when there is none. */
export type SendCallback = (request: CallbackRequest) => Promise<CallbackResponse>;

// Certificate and handshake errors, as Node and OpenSSL name them.
const TLS_ERROR = /^(ERR_TLS_|ERR_SSL_|CERT_|EPROTO$)|SELF_SIGNED|UNABLE_TO_(VERIFY|GET)|ALTNAME/;

/**
 * The callback sender: exactly one POST per call, no retry (BullMQ retries), redirects never
 * followed (a 3xx is an answer like any other), a hard time limit, and a bounded read of the
 * answer, so a merchant can neither hold a worker nor fill its memory.
 *
 * Node's own http client, not axios (which Herald keeps for OAuth token requests): this is the
 * worker's hot path, and axios's per-request work (config merging, header normalisation,
 * interceptors) measured 150-200 µs of CPU per callback, a quarter of the worker's CPU. Node's
 * client adds none of what must stay out: it follows no redirect, reads no proxy from the
 * environment, and asks for no compressed answer.
 */
export function createCallbackSender(options: CallbackSenderOptions): SendCallback {
  const { guard } = options;
  return async (callback) => {
    try {
      guard.checkUrl(callback.url);
    } catch (error) {
      throw failure(error, false, options.timeoutMs);
    }
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), options.timeoutMs);
    try {
      let response: IncomingMessage;
      try {
        response = await post(callback, controller.signal, guard.lookup);
      } catch (error) {
        throw failure(error, controller.signal.aborted, options.timeoutMs);
      }
      // The status has arrived: that is the answer. The body is only kept for support, so a body
      // that breaks off or runs past the time limit leaves what was read.
      const body = await readBounded(response, options.responseMaxBytes, controller.signal);
      const status = response.statusCode ?? 0;
      const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(response.headers['retry-after']) : undefined;
      return { status, body, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
    } finally {
      clearTimeout(timer);
    }
  };
}

/** One POST over keep-alive connections; resolves with the answer once its status and headers are in. */
function post(callback: CallbackRequest, signal: AbortSignal, lookup: LookupFunction | undefined): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const url = new URL(callback.url);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(
      url,
      {
        method: 'POST',
        headers: { ...callback.headers, 'content-length': String(Buffer.byteLength(callback.body)) },
        signal,
        // The guard's lookup checks every address the host name resolves to, as it connects.
        ...(lookup ? { lookup } : {}),
      },
      resolve,
    );
    // Also after the answer arrived (a reset mid-body): readBounded keeps what was read.
    request.on('error', reject);
    request.end(callback.body);
  });
}

/** Reads at most `maxBytes` of the body, then drops the stream (and its connection) rather than reading on. */
async function readBounded(stream: Readable, maxBytes: number, signal: AbortSignal): Promise<string> {
  const chunks: Buffer[] = [];
  let kept = 0;
  const onAbort = (): void => {
    stream.destroy();
  };
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      const take = Math.min(chunk.length, maxBytes - kept);
      if (take > 0) chunks.push(chunk.subarray(0, take));
      kept += take;
      // Leaving the loop destroys the stream: the rest of a large answer is never read.
      if (kept >= maxBytes) break;
    }
  } catch {
    // Broken off or out of time: keep what arrived.
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Retry-After (RFC 9110): delay-seconds or an HTTP date; undefined when absent or malformed. */
export function parseRetryAfter(value: unknown, now: number = Date.now()): number | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) || !/[a-z]/i.test(text) ? undefined : Math.max(0, date - now);
}

// Built from fixed phrases and codes: the error itself is not kept, as it may name the host or URL.
function failure(error: unknown, timedOut: boolean, timeoutMs: number): CallbackRequestError {
  if (timedOut) return new CallbackRequestError('timeout', `no answer within ${timeoutMs} ms`);
  // The guard's lookup fails the connection with the RefusedAddressError itself.
  const cause = error instanceof RefusedAddressError ? error : (error as { cause?: unknown } | null)?.cause;
  if (cause instanceof RefusedAddressError) return new CallbackRequestError('address_refused', cause.message, cause.code);
  const code = (error as { code?: unknown } | null)?.code;
  const causeCode = typeof code === 'string' ? code : undefined;
  if (causeCode !== undefined && TLS_ERROR.test(causeCode)) {
    return new CallbackRequestError('tls', `the TLS connection failed (${causeCode})`, causeCode);
  }
  return new CallbackRequestError('connection', `the connection failed (${causeCode ?? 'unknown error'})`, causeCode);
}
