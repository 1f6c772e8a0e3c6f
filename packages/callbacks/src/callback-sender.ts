import type { OutboundClient } from '@herald/outbound';

/** One callback POST: where, the exact bytes, and every header but the User-Agent (the outbound client sets it). */
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
  /** Sends the POST: owns the address check, the time limit, the bounded read and the no-redirect rule. */
  outbound: OutboundClient;
}

/** Sends one POST and returns the answer, whatever its status; throws OutboundRequestError when there is none. */
export type SendCallback = (request: CallbackRequest) => Promise<CallbackResponse>;

/**
 * The callback sender: one POST through the outbound client. The status is the answer: a body that
 * breaks off or runs past the time limit leaves what was read, as the body is only kept for support.
 */
export function createCallbackSender(options: CallbackSenderOptions): SendCallback {
  const { outbound, timeoutMs, responseMaxBytes } = options;
  return async ({ url, body, headers }) => {
    const response = await outbound.send({ url, method: 'POST', headers, body, timeoutMs, maxResponseBytes: responseMaxBytes, partialBody: 'keep' });
    return { status: response.status, body: response.body, ...(response.retryAfterMs === undefined ? {} : { retryAfterMs: response.retryAfterMs }) };
  };
}
