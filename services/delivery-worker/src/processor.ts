import { performance } from 'node:perf_hooks';
import type { CallbackAuthStrategy } from '@herald/callback-auth';
import { callbackFailure, sendCallback, type CallbackResult, type SendCallback } from '@herald/callbacks';
import { CredentialsCipherError, type AttemptOutcome, type DeliveryTarget, type DeliveryWork, type NewDeliveryAttempt } from '@herald/db';
import type { DeliveryRef } from '@herald/domain';
import type { Logger } from '@herald/logging';
import type { HeraldMetrics } from '@herald/metrics';
import { UnrecoverableError } from 'bullmq';
import { CallbackAttemptError } from './errors/callback-attempt-error';

/** What the processor reads of a BullMQ job. */
export interface DeliveryJob {
  readonly data: DeliveryRef;
  /** Tries BullMQ counted before this one (a replayed job keeps its count unless reset). */
  readonly attemptsMade: number;
  readonly opts: { readonly attempts?: number };
}

/** The job's return value (kept by BullMQ for the dashboard). Failures are thrown instead. */
export type DeliveryOutcome = { outcome: 'delivered'; attempt: number; statusCode: 200 } | { outcome: 'already-delivered' };

/** The processor's reads and writes, one delivery at a time (the worker batches them underneath). */
export interface DeliveryStore {
  /** The delivery with its target and event; null when there is no such delivery. */
  load(deliveryId: string): Promise<DeliveryWork | null>;
  /** Records one attempt and the delivery's new state; returns the attempt's number. */
  record(deliveryId: string, attempt: NewDeliveryAttempt, outcome: AttemptOutcome): Promise<number>;
}

export interface DeliveryProcessorDependencies {
  deliveries: DeliveryStore;
  /**
   * The auth strategy of a target, built for each attempt: an OAuth strategy's `invalidate()`
   * forgets the token that instance handed out, so an instance shared by concurrent attempts would
   * let one attempt's 401 throw away the fresh token another just fetched.
   */
  authFor(target: DeliveryTarget): CallbackAuthStrategy;
  send: SendCallback;
  logger: Logger;
  /** Counts each recorded attempt by outcome, with its duration. */
  metrics: Pick<HeraldMetrics, 'deliveryAttempt'>;
}

/**
 * The delivery use case: one attempt of one delivery. Loads the delivery (a delivered one is not
 * sent again) with its target and its event; sends one POST of the event, exactly as GET /events shows
 * it, to the target's current URL; records the attempt and the delivery's new state. Delivered
 * only on HTTP 200; any other outcome is recorded and thrown, so that BullMQ retries with its
 * backoff, or, when the target is gone or its settings unusable, fails the job at once.
 */
export function createDeliveryProcessor(deps: DeliveryProcessorDependencies): (job: DeliveryJob) => Promise<DeliveryOutcome> {
  const { logger } = deps;

  const attempt = async ({ delivery, target, event }: DeliveryWork): Promise<CallbackResult> => {
    // Credentials no key decrypts: failureOf makes it a `configuration` failure, not retried.
    if (target instanceof CredentialsCipherError) throw target;
    if (!target || target.deletedAt !== null || !target.enabled) {
      const state = !target ? 'no longer exists' : target.deletedAt !== null ? 'was deleted' : 'is switched off';
      return { delivered: false, errorKind: 'target_unavailable', errorMessage: `the notification target ${state}; not sent`, retryable: false };
    }
    if (!event) return { delivered: false, errorKind: 'internal', errorMessage: `event ${delivery.eventId} does not exist`, retryable: false };
    const auth = deps.authFor(target);
    return sendCallback(
      // The event exactly as GET /events shows it, to the target's current URL.
      { url: target.url, webhookId: event.id, body: JSON.stringify(event) },
      // What the merchant's answer must not be stored with, should it echo the request back.
      { auth, send: deps.send, knownSecrets: target.auth.mode === 'none' ? [] : [target.auth.password] },
    );
  };

  return async (job) => {
    const { deliveryId } = job.data;
    const work = await deps.deliveries.load(deliveryId);
    // Nothing to record an attempt against: the job is the only trace, in the failed set.
    if (!work) throw new UnrecoverableError(`delivery ${deliveryId} does not exist`);
    const { delivery } = work;
    if (delivery.status === 'succeeded') return { outcome: 'already-delivered' };

    const startedAt = new Date();
    const started = performance.now();
    let result: CallbackResult;
    try {
      result = await attempt(work);
    } catch (error) {
      result = failureOf(error);
    }
    const durationSeconds = (performance.now() - started) / 1000;
    const durationMs = Math.round(durationSeconds * 1000);
    const lastTry = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    const outcome: AttemptOutcome = result.delivered ? 'succeeded' : !result.retryable || lastTry ? 'failed' : 'pending';

    const number = await deps.deliveries.record(
      deliveryId,
      {
        startedAt,
        durationMs,
        ...(result.statusCode === undefined ? {} : { statusCode: result.statusCode }),
        ...(result.delivered ? {} : { errorKind: result.errorKind, errorMessage: result.errorMessage }),
        ...(result.responseBody === undefined ? {} : { responseBody: result.responseBody }),
      },
      outcome,
    );
    deps.metrics.deliveryAttempt(result.delivered ? 'delivered' : outcome === 'failed' ? 'failed' : 'attempt_failed', durationSeconds);
    const context = { deliveryId, eventId: delivery.eventId, targetId: delivery.targetId, attempt: number, durationMs };
    if (result.delivered) {
      // One line per callback, like the events-api's request log: shown from LOG_LEVEL=http (and
      // not even built below it: winston's own pipeline costs about 1 % of the worker's CPU).
      if (logger.isLevelEnabled('http')) logger.http('callback delivered', context);
      return { outcome: 'delivered', attempt: number, statusCode: 200 };
    }
    logger.warn(outcome === 'failed' ? 'callback failed; no more attempts' : 'callback attempt failed; will retry', {
      ...context,
      errorKind: result.errorKind,
      statusCode: result.statusCode,
      error: result.errorMessage,
    });
    if (!result.retryable) throw new UnrecoverableError(result.errorMessage);
    throw new CallbackAttemptError(result.errorKind, result.errorMessage, number, result.statusCode, result.retryAfterMs);
  };
}

/** The failure an error stands for: credentials no key decrypts are a `configuration` failure, not retried. */
function failureOf(error: unknown): CallbackResult {
  if (error instanceof CredentialsCipherError) return { delivered: false, errorKind: 'configuration', errorMessage: error.message, retryable: false };
  return callbackFailure(error);
}
