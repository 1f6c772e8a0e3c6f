import type { RetryAfterHint } from '@herald/queue';
import type { OutboundFailureKind } from '@herald/outbound';
import { HeraldError } from '@herald/domain';
import { messageAsStack } from './message-as-stack';

/**
 * Why an attempt failed, as delivery_attempts.error_kind records it: how the callback POST failed
 * (`timeout`, `connection`, `tls`, `address_refused`: an OutboundFailureKind; a callback keeps a
 * partial body, so never `response_too_large`), or
 * - `redirect`: the target answered 3xx (never followed);
 * - `http_status`: the target answered a status other than 200;
 * - `oauth`: no token could be had from the merchant's Authentication URL;
 * - `configuration`: the target's stored auth settings cannot be used (not retried);
 * - `target_unavailable`: the target was deleted or switched off (not retried);
 * - `internal`: Herald itself failed (Redis, database) before the callback could be sent.
 */
export type AttemptErrorKind = Exclude<OutboundFailureKind, 'response_too_large'> | 'redirect' | 'http_status' | 'oauth' | 'configuration' | 'target_unavailable' | 'internal';

/**
 * An attempt failed and was recorded; thrown to BullMQ, which retries the job after its backoff.
 * `retryAfterMs` (a 429 or 503 with Retry-After) is read by the delivery backoff strategy. The
 * message is the recorded one, which holds no secret (BullMQ keeps it as the job's failedReason);
 * it is the whole stack too (see messageAsStack).
 */
export class CallbackAttemptError extends HeraldError implements RetryAfterHint {
  override readonly name = 'CallbackAttemptError';
  readonly code = 'callback_attempt_failed';

  constructor(
    readonly kind: AttemptErrorKind,
    message: string,
    /** The attempt's number in delivery_attempts. */
    readonly attempt: number,
    readonly statusCode?: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    messageAsStack(this);
  }
}
