import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { AxiosInstance, AxiosStatic } from 'axios';
import { endHttpSpan, endSpan, httpClientAttributes, SpanKind, startSpan, type TraceContext, type Tracer } from '@herald/telemetry';
import type { ConnectGuard } from './address-policy';
import { OutboundRequestError } from './errors/outbound-request-error';
import { bodyFailure, errorCode, requestFailure } from './outbound-failure';
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
  /**
   * The trace this request is part of: with a tracer (createOutboundClient's `tracer`), the
   * request gets an HTTP client span under it. Untraced when absent.
   */
  parent?: TraceContext;
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

/** The HTTP client under an OutboundClient; both keep the same contract (see createOutboundClient). */
export type OutboundTransport = 'node' | 'axios';

/**
 * The one way Herald sends HTTP to merchants (callbacks and OAuth token requests): exactly one
 * request per call, no retry (BullMQ retries), redirects never followed (a 3xx is returned), one
 * hard time limit from resolving the host to the last body byte, a bounded read of the answer,
 * `User-Agent: Herald/<version>` in place of any caller's, no proxy, no compressed answer asked
 * for, one failure vocabulary (OutboundRequestError), and the address policy applied to what it
 * connects to: IP-address hosts before connecting, host names in the connection's own DNS lookup
 * (so a DNS answer cannot change between check and connect).
 *
 * Two HTTP clients can sit underneath, behind this one contract (one contract suite runs against
 * both): `node` (default), Node's own http client, for callbacks, the worker's hot path, where
 * axios's per-request work (config merging, header normalisation, interceptors) measured about
 * 250 µs more CPU per callback (about 460 µs against 215 µs per POST); and `axios`, the client the
 * design card names, for OAuth token requests, one per token lifetime shared by every worker
 * through Redis, where that cost is not measurable.
 */
export function createOutboundClient(options: {
  /** The address policy at send time. */
  guard: ConnectGuard;
  /** Default `node`. */
  transport?: OutboundTransport;
  /** Makes an HTTP client span of each request sent with a `parent`; none when undefined (tracing off). */
  tracer?: Tracer | undefined;
}): OutboundClient {
  const { guard, transport = 'node', tracer } = options;
  const client = clientOver(guard, transport === 'axios' ? axiosTransport(guard) : nodeTransport(guard));
  return tracer === undefined ? client : traced(client, tracer);
}

/**
 * The client with an HTTP client span (OpenTelemetry semantic conventions: named by the method,
 * url.full with every query value masked, the status, error.type) around each request that names
 * its parent. The span is made here, in the one client, by hand: the http instrumentation's span
 * per socket and request cost more than the callback itself (docs/operations.md).
 */
function traced(client: OutboundClient, tracer: Tracer): OutboundClient {
  return {
    async send(request) {
      if (request.parent === undefined) return client.send(request);
      let url: URL;
      try {
        url = new URL(request.url);
      } catch {
        return client.send(request);
      }
      const span = startSpan(tracer, request.parent, request.method, SpanKind.CLIENT, httpClientAttributes(request.method, url));
      try {
        const response = await client.send(request);
        // A client span fails from 400 on (the semantic conventions' rule for clients).
        endHttpSpan(span, response.status, 400);
        return response;
      } catch (error) {
        endSpan(span, error instanceof OutboundRequestError ? error.kind : '_OTHER');
        throw error;
      }
    },
  };
}

/** Everything of the contract but the exchange itself, which `transport` makes. */
function clientOver(guard: ConnectGuard, transport: Transport): OutboundClient {
  return {
    async send(request) {
      let url: URL;
      try {
        url = new URL(request.url);
        if (url.protocol !== 'http:' && url.protocol !== 'https:') throw Object.assign(new Error('not an HTTP URL'), { code: 'ERR_INVALID_PROTOCOL' });
        guard.checkUrl(url);
      } catch (error) {
        throw requestFailure(error, request.timeoutMs);
      }
      const deadline = new Deadline(request.timeoutMs);
      try {
        let response: IncomingMessage;
        try {
          response = await transport({ url, method: request.method, headers: requestHeaders(request), body: request.body, deadline });
        } catch (error) {
          throw requestFailure(error, request.timeoutMs, deadline.expired);
        }
        const status = response.statusCode ?? 0;
        const read = await readBounded(response, request.maxResponseBytes, deadline);
        if (read.end !== 'complete' && request.partialBody === 'fail') throw bodyFailure(read, status, request);
        const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(response.headers['retry-after']) : undefined;
        return {
          status,
          headers: response.headers,
          body: read.body,
          truncated: read.end !== 'complete',
          ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        };
      } finally {
        deadline.clear();
      }
    },
  };
}

/** The caller's headers, with Herald's User-Agent and the body's length in place of any given. */
function requestHeaders(request: OutboundRequest): Record<string, string> {
  const headers: Record<string, string> = { ...request.headers, 'user-agent': HERALD_USER_AGENT };
  if (request.body !== undefined) headers['content-length'] = String(Buffer.byteLength(request.body));
  return headers;
}

// The exchange under the client: the transport that makes it (Node's own client or axios, behind
// one signature), the one time limit over it, and the bounded read of its answer.

/** One request as a transport sends it: its URL already checked, its headers final. */
interface TransportRequest {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
  /** The client's one time limit: when it passes, the request, its connection and the answer's body are dropped. */
  deadline: Deadline;
}

/**
 * Sends one request and resolves with the answer once its status and headers are in, its body not
 * read yet (the client reads it, bounded). Rejects with the underlying client's own error, which
 * the client maps to an OutboundRequestError.
 */
type Transport = (request: TransportRequest) => Promise<IncomingMessage>;

/**
 * Keep-alive pools of one client only, configured as Node's global agents are: a pooled connection
 * was checked by this guard when it was made, and these agents (not the global ones, which newer
 * Node versions can point at HTTP(S)_PROXY) never use a proxy, which would connect in our place,
 * out of reach of the address check. The guard's lookup is an agent option, which the agent passes
 * to every connection it makes.
 */
function guardedAgents(guard: ConnectGuard): { http: HttpAgent; https: HttpsAgent } {
  const options = { keepAlive: true, scheduling: 'lifo' as const, timeout: 5_000, ...(guard.lookup ? { lookup: guard.lookup } : {}) };
  return { http: new HttpAgent(options), https: new HttpsAgent(options) };
}

/**
 * Node's own http client. It adds nothing that must stay out: it follows no redirect, asks for no
 * compressed answer and sends no header it was not given but Host, Connection and Content-Length.
 */
function nodeTransport(guard: ConnectGuard): Transport {
  const agents = guardedAgents(guard);
  return ({ url, method, headers, body, deadline }) =>
    new Promise((resolve, reject) => {
      const https = url.protocol === 'https:';
      const sent = (https ? httpsRequest : httpRequest)(url, { method, headers, agent: https ? agents.https : agents.http }, resolve);
      // Also after the answer arrived (a reset mid-body): the bounded read sees that on the response.
      sent.on('error', reject);
      // Past the time limit the request goes, with its connection and so its answer's body.
      deadline.onExpiry(() => sent.destroy(Object.assign(new Error('the request timed out'), { code: 'ABORT_ERR' })));
      sent.end(body);
    });
}

/**
 * axios over Node's client, configured down to what the node transport does: no redirect followed
 * (a 3xx is an answer), no proxy (not even one named by HTTP(S)_PROXY, which axios reads itself), no
 * compressed answer asked for or decoded, none of axios's default headers (Accept,
 * Accept-Encoding), every status an answer, and the body handed over unread, as a stream.
 */
function axiosTransport(guard: ConnectGuard): Transport {
  const agents = guardedAgents(guard);
  // Loaded at the first request, not when this package is imported or a client made: the
  // events-api imports the package for its address policy and never sends with axios, and a worker
  // whose targets use no OAuth never requests a token.
  let loaded: Promise<{ axios: AxiosStatic; instance: AxiosInstance }> | undefined;
  const load = () =>
    (loaded ??= import('axios').then(({ default: axios }) => ({
      axios,
      instance: axios.create({
        adapter: 'http',
        httpAgent: agents.http,
        httpsAgent: agents.https,
        proxy: false,
        maxRedirects: 0,
        decompress: false,
        responseType: 'stream',
        validateStatus: () => true,
        transformRequest: [],
        transformResponse: [],
      }),
    })));

  return async ({ url, method, headers, body, deadline }) => {
    const { axios, instance } = await load();
    try {
      const response = await instance.request<IncomingMessage>({
        url: url.href,
        method,
        // `false` keeps axios from adding its own; a caller's value replaces it.
        headers: { accept: false, 'accept-encoding': false, ...headers },
        data: body === undefined ? undefined : Buffer.from(body, 'utf8'),
        signal: deadline.signal(),
      });
      return response.data;
    } catch (error) {
      throw unwrap(axios, error);
    }
  };
}

/**
 * axios wraps the error of the connection (the guard's refusal, a reset, a TLS failure) in its own,
 * which also carries the whole request (URL, headers, credentials): only the cause goes on.
 */
function unwrap(axios: AxiosStatic, error: unknown): unknown {
  return axios.isAxiosError(error) && error.cause !== undefined ? error.cause : error;
}

/**
 * A request's one time limit, from resolving the host to the last body byte read. Lighter than an
 * AbortController: every callback makes one, and an AbortSignal with the listeners Node's http
 * client and the body read put on it cost about 26 µs of the worker's CPU per callback, as much as
 * all of Herald's own code on that path (V8 profiles, docs/benchmarks.md).
 */
export class Deadline {
  #expired = false;
  #listeners: Array<() => void> = [];
  readonly #timer: NodeJS.Timeout;

  constructor(ms: number) {
    this.#timer = setTimeout(() => this.#expire(), ms);
  }

  /** Whether the time limit has passed. */
  get expired(): boolean {
    return this.#expired;
  }

  /** Calls `listener` once when the time limit passes (at once if it has); returns what stops that. */
  onExpiry(listener: () => void): () => void {
    if (this.#expired) {
      listener();
      return () => undefined;
    }
    this.#listeners.push(listener);
    return () => {
      const i = this.#listeners.indexOf(listener);
      if (i >= 0) this.#listeners.splice(i, 1);
    };
  }

  /** An AbortSignal that aborts when the time limit passes, for a client that takes only that (axios). */
  signal(): AbortSignal {
    const controller = new AbortController();
    this.onExpiry(() => controller.abort());
    return controller.signal;
  }

  /** The request is over: no listener is called any more. */
  clear(): void {
    clearTimeout(this.#timer);
    this.#listeners = [];
  }

  #expire(): void {
    this.#expired = true;
    const listeners = this.#listeners;
    this.#listeners = [];
    for (const listener of listeners) listener();
  }
}

/** What was read of a body, and why reading stopped. */
interface BodyRead {
  body: string;
  end: 'complete' | 'too_large' | 'timeout' | 'broken';
  /** The system error that broke the body off. */
  causeCode?: string;
}

/**
 * Reads at most `maxBytes` of the body, then drops the stream (and its connection) rather than
 * reading on. Over the stream's own events: a callback's answer is one small chunk, and an async
 * iterator over it (its promises, its extra listeners) cost more CPU than the rest of the read.
 */
function readBounded(stream: IncomingMessage, maxBytes: number, deadline: Deadline): Promise<BodyRead> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    let end: BodyRead['end'] = 'complete';
    let causeCode: string | undefined;
    let done = false;
    let stopWaiting = (): void => undefined;

    const finish = (): void => {
      if (done) return;
      done = true;
      // The error listener stays: an error the stream emits later must not go unhandled.
      stream.off('data', onData);
      stream.off('end', finish);
      stream.off('close', finish);
      stopWaiting();
      // A stream destroyed (past the time limit, by a reset) may close without an error and without its end.
      if (end === 'complete' && !stream.complete) end = deadline.expired ? 'timeout' : 'broken';
      const body = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
      resolve({ body, end, ...(causeCode === undefined ? {} : { causeCode }) });
    };
    const onData = (chunk: Buffer): void => {
      const room = maxBytes - kept;
      if (chunk.length > room) {
        if (room > 0) chunks.push(chunk.subarray(0, room));
        kept = maxBytes;
        end = 'too_large';
        // The rest of a large answer is never read.
        stream.destroy();
        finish();
        return;
      }
      chunks.push(chunk);
      kept += chunk.length;
    };
    const onError = (error: unknown): void => {
      if (done) return;
      end = deadline.expired ? 'timeout' : 'broken';
      causeCode = errorCode(error);
      finish();
    };
    if (deadline.expired) {
      stream.destroy();
      end = 'timeout';
      finish();
      return;
    }
    stopWaiting = deadline.onExpiry(() => stream.destroy());
    stream.on('data', onData);
    stream.once('end', finish);
    stream.on('error', onError);
    stream.once('close', finish);
  });
}
