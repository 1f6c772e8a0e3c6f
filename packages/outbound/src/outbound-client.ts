import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { readBounded } from './bounded-read';
import type { ConnectGuard } from './connect-guard';
import { Deadline } from './deadline';
import { bodyFailure, requestFailure } from './outbound-failure';
import { parseRetryAfter } from './retry-after';
import { axiosTransport } from './transports/axios-transport';
import { nodeTransport } from './transports/node-transport';
import type { Transport } from './transports/transport';
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
}): OutboundClient {
  const { guard, transport = 'node' } = options;
  return clientOver(guard, transport === 'axios' ? axiosTransport(guard) : nodeTransport(guard));
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
