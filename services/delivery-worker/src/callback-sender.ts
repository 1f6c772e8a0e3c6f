import type { Readable } from 'node:stream';
import { RefusedAddressError, type ConnectGuard } from '@herald/outbound';
import axios, { type AxiosRequestConfig, type AxiosResponse } from 'axios';
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
 */
export function createCallbackSender(options: CallbackSenderOptions): SendCallback {
  const { guard } = options;
  return async (request) => {
    try {
      guard.checkUrl(request.url);
    } catch (error) {
      throw failure(error, false, options.timeoutMs);
    }
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), options.timeoutMs);
    try {
      let response: AxiosResponse<Readable>;
      try {
        response = await axios.request<Readable>({
          method: 'POST',
          url: request.url,
          headers: request.headers,
          data: request.body,
          adapter: 'http',
          signal: controller.signal,
          maxRedirects: 0,
          responseType: 'stream',
          validateStatus: () => true,
          // A proxy from the environment would connect in our place, out of reach of the guard.
          proxy: false,
          // Node's lookup signature, which axios hands to http.request unchanged; its own type is narrower.
          ...(guard.lookup ? { lookup: guard.lookup as AxiosRequestConfig['lookup'] } : {}),
        });
      } catch (error) {
        throw failure(error, controller.signal.aborted, options.timeoutMs);
      }
      // The status has arrived: that is the answer. The body is only kept for support, so a body
      // that breaks off or runs past the time limit leaves what was read.
      const body = await readBounded(response.data, options.responseMaxBytes, controller.signal);
      const retryAfterMs = response.status === 429 || response.status === 503 ? parseRetryAfter(response.headers['retry-after']) : undefined;
      return { status: response.status, body, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
    } finally {
      clearTimeout(timer);
    }
  };
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

// Built from fixed phrases and codes: the axios error is not kept, as its config holds the URL and headers.
function failure(error: unknown, timedOut: boolean, timeoutMs: number): CallbackRequestError {
  if (timedOut) return new CallbackRequestError('timeout', `no answer within ${timeoutMs} ms`);
  const cause = error instanceof RefusedAddressError ? error : (error as { cause?: unknown } | null)?.cause;
  if (cause instanceof RefusedAddressError) return new CallbackRequestError('address_refused', cause.message, cause.code);
  const code = (error as { code?: unknown } | null)?.code;
  const causeCode = typeof code === 'string' ? code : undefined;
  if (causeCode !== undefined && TLS_ERROR.test(causeCode)) {
    return new CallbackRequestError('tls', `the TLS connection failed (${causeCode})`, causeCode);
  }
  return new CallbackRequestError('connection', `the connection failed (${causeCode ?? 'unknown error'})`, causeCode);
}
