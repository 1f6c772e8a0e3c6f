import { OutboundRequestError, type OutboundClient, type OutboundFailureKind } from '@herald/outbound';
import { AuthConfigurationError, TokenRequestError, TokenWaitTimeoutError, UnknownAuthModeError, type CallbackAuthStrategy } from '@herald/callback-auth';
import { redactForeignText } from '@herald/logging';
import { standardWebhookHeaders } from '@herald/domain';
import type { TraceContext } from '@herald/telemetry';

// One callback: the POST over the outbound client, its headers and signature (callbackHeaders),
// the one retry after a 401 of an OAuth target, and the answer classed as a CallbackResult.

/** One callback POST: where, the exact bytes, and every header but the User-Agent (the outbound client sets it). */
export interface CallbackRequest {
  url: string;
  /** The event's JSON, serialised once so that every POST of an attempt sends the same bytes. */
  body: string;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** This POST's time limit in ms (its target's policy); absent: the sender's `timeoutMs`. */
  timeoutMs?: number;
  /** The trace of the attempt: the POST gets an HTTP client span under it (see the outbound client). */
  parent?: TraceContext;
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
  /** Hard limit on one POST, from connecting to the last body byte read, in ms, unless the request sets its own. */
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
  return async ({ url, body, headers, timeoutMs: own, parent }) => {
    const response = await outbound.send({
      url,
      method: 'POST',
      headers,
      body,
      timeoutMs: own ?? timeoutMs,
      maxResponseBytes: responseMaxBytes,
      partialBody: 'keep',
      ...(parent === undefined ? {} : { parent }),
    });
    return { status: response.status, body: response.body, ...(response.retryAfterMs === undefined ? {} : { retryAfterMs: response.retryAfterMs }) };
  };
}

/** One callback's content: the same on every POST of it. */
export interface CallbackMessage {
  /** The target's URL, as stored. */
  url: string;
  /** `webhook-id`: the event's id (the same on every retry, so the merchant can drop a repeat). */
  webhookId: string;
  /** The JSON body, serialised once so that every POST sends the same bytes. */
  body: string;
  /**
   * The target's signing secrets in use now (current first; the previous one too during a
   * rotation's grace period): each adds a `webhook-signature`. None: the callback goes unsigned.
   */
  signingSecrets?: readonly string[];
  /** Headers of this kind of callback only (e.g. the test callback's marker), lower-case names. */
  extraHeaders?: Record<string, string>;
  /** Each POST's time limit in ms (the target's policy); absent: the sender's own. */
  timeoutMs?: number;
}

/** What sending needs: the target's auth, the sender, and the secrets its answer must not keep. */
export interface CallbackChannel {
  /** Built for this callback alone: `invalidate()` after a 401 forgets the token it handed out. */
  auth: CallbackAuthStrategy;
  send: SendCallback;
  /** The target's own secrets (its password), masked in the answer should the merchant echo them. */
  knownSecrets: readonly string[];
  /** Told the URL each POST goes to, once it goes out (the attempt log keeps it). */
  onPost?: (url: string) => void;
}

/**
 * The headers of every callback POST, built in this one place for queued and test callbacks alike.
 * The timestamp is that of the POST itself, so a receiver can check it for freshness.
 */
function callbackHeaders(message: CallbackMessage, authHeaders: Record<string, string>): Record<string, string> {
  const webhook = { id: message.webhookId, timestamp: Math.floor(Date.now() / 1000), body: message.body };
  const secrets = message.signingSecrets ?? [];
  return {
    // First, so that they can add to the callback's headers but never replace one.
    ...message.extraHeaders,
    'content-type': 'application/json',
    // Standard Webhooks headers: the id is the same on every retry, so the merchant can drop a
    // callback it has already processed; the signature (built from the very values sent) proves
    // the body came from Herald.
    ...(secrets.length > 0 ? standardWebhookHeaders(webhook, secrets) : { 'webhook-id': webhook.id, 'webhook-timestamp': String(webhook.timestamp) }),
    ...authHeaders,
  };
}

/**
 * Sends one callback and says how it ended; never throws. An OAuth target that answers 401 gets
 * one more POST with a fresh token (the token may have been revoked before it expired); a second
 * 401 is the merchant's answer. The answer's body is redacted before it is returned.
 */
export async function sendCallback(message: CallbackMessage, channel: CallbackChannel): Promise<CallbackResult> {
  const { auth, send } = channel;
  // Credentials this callback's auth headers carried, also masked in the answer.
  const sentCredentials: string[] = [];
  const post = async (): Promise<CallbackResponse> => {
    const authHeaders = await auth.headers();
    sentCredentials.push(...credentialsIn(authHeaders));
    channel.onPost?.(message.url);
    return send({
      url: message.url,
      body: message.body,
      headers: callbackHeaders(message, authHeaders),
      ...(message.timeoutMs === undefined ? {} : { timeoutMs: message.timeoutMs }),
    });
  };
  try {
    let response = await post();
    if (response.status === 401 && auth.mode === 'oauth') {
      await auth.invalidate();
      response = await post();
    }
    return callbackResult({ ...response, body: redactForeignText(response.body, [...channel.knownSecrets, ...sentCredentials]) });
  } catch (error) {
    return callbackFailure(error);
  }
}

/** Each auth header's value, and its credentials without the scheme (`Basic …`, `Bearer …`). */
function credentialsIn(headers: Record<string, string>): string[] {
  return Object.values(headers).flatMap((value) => [value, ...(/^\S+\s+(\S.*)$/.exec(value)?.slice(1) ?? [])]);
}

/**
 * Why a callback failed, as delivery_attempts.error_kind records it: how the callback POST failed
 * (`timeout`, `connection`, `tls`, `address_refused`: an OutboundFailureKind; a callback keeps a
 * partial body, so never `response_too_large`), or
 * - `redirect`: the target answered 3xx (never followed);
 * - `http_status`: the target answered a status other than 200;
 * - `oauth`: no token could be had from the merchant's Authentication URL;
 * - `configuration`: the target's stored auth settings cannot be used (not retried);
 * - `target_unavailable`: the target was deleted or switched off (not retried);
 * - `internal`: Herald itself failed (Redis, database) before the callback could be sent.
 */
export type AttemptErrorKind =
  | Exclude<OutboundFailureKind, 'response_too_large'>
  | 'redirect'
  | 'http_status'
  | 'oauth'
  | 'configuration'
  | 'target_unavailable'
  | 'internal';

/** How one callback ended: delivered (HTTP 200, and only 200), or why not. */
export type CallbackResult =
  | { delivered: true; statusCode: 200; responseBody: string }
  | {
      delivered: false;
      errorKind: AttemptErrorKind;
      errorMessage: string;
      /** False when trying again cannot help until someone changes the target. */
      retryable: boolean;
      statusCode?: number;
      responseBody?: string;
      retryAfterMs?: number;
    };

/** What an answer means: HTTP 200, and only 200, is delivered (spec: "Expected response: HTTP 200 OK"). */
function callbackResult(response: CallbackResponse): CallbackResult {
  const { status, body: responseBody } = response;
  if (status === 200) return { delivered: true, statusCode: 200, responseBody };
  if (status >= 300 && status < 400) {
    return {
      delivered: false,
      errorKind: 'redirect',
      errorMessage: `the target redirected (HTTP ${status}); redirects are not followed`,
      retryable: true,
      statusCode: status,
      responseBody,
    };
  }
  return {
    delivered: false,
    errorKind: 'http_status',
    errorMessage: `the target answered HTTP ${status}; only 200 counts as delivered`,
    retryable: true,
    statusCode: status,
    responseBody,
    ...(response.retryAfterMs === undefined ? {} : { retryAfterMs: response.retryAfterMs }),
  };
}

/**
 * The failure an error of a callback's exchange stands for (the POST, the auth strategy), or an
 * `internal` one for any other. Every message here is free of secrets (see each error's class).
 */
export function callbackFailure(error: unknown): CallbackResult {
  const failed = (errorKind: AttemptErrorKind, errorMessage: string, retryable = true): CallbackResult => ({
    delivered: false,
    errorKind,
    errorMessage,
    retryable,
  });
  // Retried, a refused address too: DNS answers change, and the next attempt checks it again.
  if (error instanceof OutboundRequestError && error.kind !== 'response_too_large') return failed(error.kind, error.message);
  if (error instanceof TokenRequestError) return failed(error.kind === 'address_refused' ? 'address_refused' : 'oauth', error.message);
  if (error instanceof TokenWaitTimeoutError) return failed('oauth', error.message);
  if (error instanceof AuthConfigurationError || error instanceof UnknownAuthModeError) return failed('configuration', error.message, false);
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return failed('internal', message.slice(0, 500));
}
