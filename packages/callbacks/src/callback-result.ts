import { AuthConfigurationError, TokenRequestError, TokenWaitTimeoutError, UnknownAuthModeError } from '@herald/callback-auth';
import { OutboundRequestError, type OutboundFailureKind } from '@herald/outbound';
import type { CallbackResponse } from './callback-sender';

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
export function callbackResult(response: CallbackResponse): CallbackResult {
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
