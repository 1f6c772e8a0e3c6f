import type { RetryAfterHint } from '@herald/queue';
import type { AttemptErrorKind } from '@herald/callbacks';
import { HeraldError } from '@herald/domain';
import { messageAsStack } from './message-as-stack';

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
    /** The target's longest wait between tries, as its policy said at this attempt (read by the backoff strategy). */
    readonly backoffMaxMs?: number,
  ) {
    super(message);
    messageAsStack(this);
  }
}
