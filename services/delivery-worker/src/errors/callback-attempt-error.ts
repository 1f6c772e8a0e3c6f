import type { RetryAfterHint } from '@herald/queue';
import type { AttemptErrorKind } from '@herald/callbacks';
import { HeraldError } from '@herald/domain';
import { UnrecoverableError } from 'bullmq';
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

/**
 * The last attempt its target's delivery policy allows failed, and was recorded. BullMQ's attempts
 * of a delivery job are only a ceiling (packages/queue deliveryJobOptions), so this one fails the
 * job for good (an UnrecoverableError to BullMQ), whatever attempts the job has left. It reads as
 * the other attempts' errors do (name CallbackAttemptError), so that the job's failure history in
 * the dashboard is the same list of callback failures, whatever the policy.
 */
export class LastCallbackAttemptError extends UnrecoverableError {
  override readonly name = 'CallbackAttemptError';
  readonly code = 'callback_attempts_spent';

  constructor(
    readonly kind: AttemptErrorKind,
    message: string,
    /** The attempt's number in delivery_attempts. */
    readonly attempt: number,
    readonly statusCode?: number,
  ) {
    super(message);
    messageAsStack(this);
  }
}
