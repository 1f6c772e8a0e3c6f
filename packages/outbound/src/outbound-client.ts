import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { ConnectGuard } from './connect-guard';
import { OutboundRequestError } from './errors/outbound-request-error';
import { parseRetryAfter } from './retry-after';
import { HERALD_USER_AGENT } from './user-agent';

/** One outbound request and its limits. */
export interface OutboundRequest {
  url: string;
  /** e.g. 'POST'. */
  method: string;
  /** Lower-case names. `user-agent` and `content-length` are set by the client. */
  headers: Record<string, string>;
  /** Sent as UTF-8; none when undefined. */
  body?: string;
  /** Hard limit on the whole request, from resolving the host to the last body byte read, in ms. */
  timeoutMs: number;
  /** Most bytes of the answer's body read; past them the connection is dropped, not read on. */
  maxResponseBytes: number;
  /**
   * What a body that does not arrive whole means, once the status has arrived:
   * - `keep` (default): the status is the answer; the response holds what was read and
   *   `truncated` is true (a callback's body is only kept for support);
   * - `fail`: the request fails with `response_too_large` past maxResponseBytes, `timeout` past
   *   the time limit, `connection` when the connection breaks (a token must be read whole).
   */
  partialBody?: 'keep' | 'fail';
}

/** The answer, whatever its status: a 3xx is returned like any other status and never followed. */
export interface OutboundResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** At most maxResponseBytes of the body, as UTF-8 text. */
  body: string;
  /** The body is not all of it: it ran past maxResponseBytes, broke off or stalled past the time limit (`partialBody: 'keep'` only). */
  truncated: boolean;
  /** The wait a 429 or 503 asked for with Retry-After (seconds or an HTTP date), in ms. */
  retryAfterMs?: number;
}

/** Sends outbound HTTP on Herald's behalf; see createOutboundClient. */
export interface OutboundClient {
  /** Sends one request and returns the answer; throws OutboundRequestError, and nothing else, when there is none. */
  send(request: OutboundRequest): Promise<OutboundResponse>;
}

// Certificate and handshake errors, as Node and OpenSSL name them.
const TLS_ERROR = /^(ERR_TLS_|ERR_SSL_|CERT_|EPROTO$)|SELF_SIGNED|UNABLE_TO_(VERIFY|GET)|ALTNAME/;

/**
 * The one way Herald sends HTTP to merchants (callbacks and OAuth token requests): exactly one
 * request per call, no retry (BullMQ retries), redirects never followed, one hard time limit, a
 * bounded read of the answer, `User-Agent: Herald/<version>`, and the address policy applied to
 * what it connects to: IP-address hosts before connecting, host names in the connection's own
 * DNS lookup (so a DNS answer cannot change between check and connect).
 *
 * Node's own http client, not axios: callbacks are the worker's hot path, and axios's per-request
 * work (config merging, header normalisation, interceptors) measured 150-200 µs of CPU per
 * callback, a quarter of the worker's CPU. Node's client adds none of what must stay out: it
 * follows no redirect and asks for no compressed answer; and the client's own agents (not the
 * global ones, which newer Node versions can point at HTTP(S)_PROXY) never use a proxy, which
 * would connect in our place, out of reach of the address check.
 */
export function createOutboundClient(options: {
  /** The address policy at send time. */
  guard: ConnectGuard;
}): OutboundClient {
  const { guard } = options;
  // Keep-alive pools of this client only, as Node's global agents are configured: a pooled
  // connection was checked by this guard when it was made. The guard's lookup is an agent option,
  // which the agent passes to every connection it makes.
  const agentOptions = { keepAlive: true, scheduling: 'lifo' as const, timeout: 5_000, ...(guard.lookup ? { lookup: guard.lookup } : {}) };
  const agents = { http: new HttpAgent(agentOptions), https: new HttpsAgent(agentOptions) };

  return {
    async send(request) {
      let url: URL;
      try {
        url = new URL(request.url);
        guard.checkUrl(url);
      } catch (error) {
        throw failure(error, request);
      }
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), request.timeoutMs);
      try {
        let response: IncomingMessage;
        try {
          response = await exchange(url, request, agents, controller.signal);
        } catch (error) {
          throw failure(error, request, controller.signal.aborted);
        }
        const status = response.statusCode ?? 0;
        const read = await readBounded(response, request.maxResponseBytes, controller.signal);
        if (read.end !== 'complete' && request.partialBody === 'fail') throw bodyFailure(read, status, request);
        const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(response.headers['retry-after']) : undefined;
        return { status, headers: response.headers, body: read.body, truncated: read.end !== 'complete', ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** Sends the request; resolves with the answer once its status and headers are in. */
function exchange(url: URL, request: OutboundRequest, agents: { http: HttpAgent; https: HttpsAgent }, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const https = url.protocol === 'https:';
    const headers: Record<string, string> = { ...request.headers, 'user-agent': HERALD_USER_AGENT };
    if (request.body !== undefined) headers['content-length'] = String(Buffer.byteLength(request.body));
    const sent = (https ? httpsRequest : httpRequest)(url, { method: request.method, headers, signal, agent: https ? agents.https : agents.http }, resolve);
    // Also after the answer arrived (a reset mid-body): readBounded sees that on the response.
    sent.on('error', reject);
    sent.end(request.body);
  });
}

/** What was read of a body, and why reading stopped. */
interface BodyRead {
  body: string;
  end: 'complete' | 'too_large' | 'timeout' | 'broken';
  /** The system error that broke the body off. */
  causeCode?: string;
}

/** Reads at most `maxBytes` of the body, then drops the stream (and its connection) rather than reading on. */
async function readBounded(stream: IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<BodyRead> {
  const chunks: Buffer[] = [];
  let kept = 0;
  let end: BodyRead['end'] = 'complete';
  let causeCode: string | undefined;
  const onAbort = (): void => {
    stream.destroy();
  };
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      const room = maxBytes - kept;
      if (chunk.length > room) {
        if (room > 0) chunks.push(chunk.subarray(0, room));
        kept = maxBytes;
        end = 'too_large';
        // Leaving the loop destroys the stream: the rest of a large answer is never read.
        break;
      }
      chunks.push(chunk);
      kept += chunk.length;
    }
  } catch (error) {
    end = signal.aborted ? 'timeout' : 'broken';
    causeCode = errorCode(error);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
  // A stream destroyed by the abort may end its iteration without an error.
  if (end === 'complete' && !stream.complete) end = signal.aborted ? 'timeout' : 'broken';
  const body = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
  return { body, end, ...(causeCode === undefined ? {} : { causeCode }) };
}

// Built from fixed phrases and codes: the error itself is not kept, as it may name the URL.
function failure(error: unknown, request: OutboundRequest, timedOut = false): OutboundRequestError {
  if (timedOut) return new OutboundRequestError('timeout', `no answer within ${request.timeoutMs} ms`);
  // The guard fails the connection (or the check before it) with its own error.
  if (error instanceof OutboundRequestError) return error;
  const code = errorCode(error);
  if (code !== undefined && TLS_ERROR.test(code)) return new OutboundRequestError('tls', `the TLS connection failed (${code})`, code);
  return new OutboundRequestError('connection', `the connection failed (${code ?? 'unknown error'})`, code);
}

function bodyFailure(read: BodyRead, status: number, request: OutboundRequest): OutboundRequestError {
  if (read.end === 'too_large') {
    return new OutboundRequestError('response_too_large', `the response body is larger than ${request.maxResponseBytes} bytes`, undefined, status);
  }
  if (read.end === 'timeout') return new OutboundRequestError('timeout', `no complete answer within ${request.timeoutMs} ms`, undefined, status);
  return new OutboundRequestError('connection', `the connection broke off during the answer (${read.causeCode ?? 'unknown error'})`, read.causeCode, status);
}

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}
