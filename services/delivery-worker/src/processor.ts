import { performance } from 'node:perf_hooks';
import { AuthConfigurationError, TokenRequestError, TokenWaitTimeoutError, UnknownAuthModeError, type CallbackAuthStrategy } from '@herald/callback-auth';
import { CredentialsCipherError, type AttemptOutcome, type DeliveryTarget, type DeliveryWork, type NewDeliveryAttempt, type RecordedAttempt } from '@herald/db';
import { AUTO_DISABLED_REASON, shouldAutoDisable, type DeliveryRef } from '@herald/domain';
import { redactForeignText, type Logger } from '@herald/logging';
import type { HeraldMetrics } from '@herald/metrics';
import { OutboundRequestError } from '@herald/outbound';
import { UnrecoverableError } from 'bullmq';
import type { CallbackResponse, SendCallback } from './callback-sender';
import { CallbackAttemptError, type AttemptErrorKind } from './errors/callback-attempt-error';

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
  /**
   * Records one attempt, the delivery's new state and its target's health; `disableTarget` asks
   * for the target to be auto-disabled. Returns the attempt's number and whether it switched the
   * target off.
   */
  record(deliveryId: string, attempt: NewDeliveryAttempt, outcome: AttemptOutcome, disableTarget: boolean): Promise<RecordedAttempt>;
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
  /** Counts each recorded attempt by outcome, with its duration, and targets switched off. */
  metrics: Pick<HeraldMetrics, 'deliveryAttempt' | 'targetAutoDisabled'>;
  /** TARGET_AUTO_DISABLE_AFTER in ms: how long every attempt to a target may fail before it is switched off; 0 never. */
  autoDisableAfterMs: number;
}

// Failures that say nothing about the merchant's endpoint: Herald's own, or a target already off.
const NOT_THE_TARGETS_FAULT: ReadonlySet<string> = new Set(['internal', 'target_unavailable']);

/** How an attempt ended, before it is recorded. */
type AttemptResult =
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

/**
 * The delivery use case: one attempt of one delivery. Loads the delivery (a delivered one is not
 * sent again) with its target and its event; sends one POST of the event, exactly as GET /events shows
 * it, to the target's current URL; records the attempt and the delivery's new state. Delivered
 * only on HTTP 200; any other outcome is recorded and thrown, so that BullMQ retries with its
 * backoff, or, when the target is gone or its settings unusable, fails the job at once.
 */
export function createDeliveryProcessor(deps: DeliveryProcessorDependencies): (job: DeliveryJob) => Promise<DeliveryOutcome> {
  const { logger } = deps;

  /**
   * One POST; the timestamp is that of the POST itself, so a receiver can check it for freshness.
   * The credentials its auth headers carry are added to `sentCredentials`.
   */
  const post = async (url: string, eventId: string, body: string, auth: CallbackAuthStrategy, sentCredentials: string[]): Promise<CallbackResponse> => {
    const authHeaders = await auth.headers();
    sentCredentials.push(...credentialsIn(authHeaders));
    return deps.send({
      url,
      body,
      headers: {
        'content-type': 'application/json',
        // Standard Webhooks headers: the id is the event's, the same on every retry, so the
        // merchant can drop a callback it has already processed.
        'webhook-id': eventId,
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
        ...authHeaders,
      },
    });
  };

  const attempt = async ({ delivery, target, event }: DeliveryWork): Promise<AttemptResult> => {
    // Credentials no key decrypts: failureOf makes it a `configuration` failure, not retried.
    if (target instanceof CredentialsCipherError) throw target;
    if (!target || target.deletedAt !== null || !target.enabled) {
      const state = !target
        ? 'no longer exists'
        : target.deletedAt !== null
          ? 'was deleted'
          : target.disabledReason === AUTO_DISABLED_REASON
            ? 'was auto-disabled after every attempt failed for too long (switch it on again once the endpoint is fixed, then replay)'
            : 'is switched off';
      return { delivered: false, errorKind: 'target_unavailable', errorMessage: `the notification target ${state}; not sent`, retryable: false };
    }
    if (!event) return { delivered: false, errorKind: 'internal', errorMessage: `event ${delivery.eventId} does not exist`, retryable: false };
    const body = JSON.stringify(event);
    const auth = deps.authFor(target);
    // What the merchant's answer must not be stored with, should it echo the request back.
    const credentials = target.auth.mode === 'none' ? [] : [target.auth.password];

    let response = await post(target.url, event.id, body, auth, credentials);
    if (response.status === 401 && auth.mode === 'oauth') {
      // The token may have been revoked before it expired: one more POST with a fresh token, within
      // this attempt. A second 401 is the merchant's answer.
      await auth.invalidate();
      response = await post(target.url, event.id, body, auth, credentials);
    }
    return resultOf({ ...response, body: redactForeignText(response.body, credentials) });
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
    let result: AttemptResult;
    try {
      result = await attempt(work);
    } catch (error) {
      result = failureOf(error);
    }
    const durationSeconds = (performance.now() - started) / 1000;
    const durationMs = Math.round(durationSeconds * 1000);
    const { target } = work;
    const disableTarget =
      !result.delivered &&
      !NOT_THE_TARGETS_FAULT.has(result.errorKind) &&
      target !== null &&
      !(target instanceof CredentialsCipherError) &&
      shouldAutoDisable(target.failingSince, startedAt, deps.autoDisableAfterMs);
    if (disableTarget && !result.delivered) {
      // The last step of a target that keeps failing: no retry of this delivery, and the target's
      // other deliveries fail as target_unavailable at their next try, until it is switched on again.
      result = {
        ...result,
        retryable: false,
        errorMessage: `${result.errorMessage}; every attempt since ${target!.failingSince!.toISOString()} failed, so the notification target is auto-disabled`,
      };
    }
    const lastTry = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    const outcome: AttemptOutcome = result.delivered ? 'succeeded' : !result.retryable || lastTry ? 'failed' : 'pending';

    const recorded = await deps.deliveries.record(
      deliveryId,
      {
        startedAt,
        durationMs,
        ...(result.statusCode === undefined ? {} : { statusCode: result.statusCode }),
        ...(result.delivered ? {} : { errorKind: result.errorKind, errorMessage: result.errorMessage }),
        ...(result.responseBody === undefined ? {} : { responseBody: result.responseBody }),
      },
      outcome,
      disableTarget,
    );
    const number = recorded.number;
    deps.metrics.deliveryAttempt(result.delivered ? 'delivered' : outcome === 'failed' ? 'failed' : 'attempt_failed', durationSeconds);
    const context = { deliveryId, eventId: delivery.eventId, targetId: delivery.targetId, attempt: number, durationMs };
    if (result.delivered) {
      // One line per callback, like the events-api's request log: shown from LOG_LEVEL=http (and
      // not even built below it: winston's own pipeline costs about 1 % of the worker's CPU).
      if (logger.isLevelEnabled('http')) logger.http('callback delivered', context);
      return { outcome: 'delivered', attempt: number, statusCode: 200 };
    }
    if (recorded.targetAutoDisabled) {
      deps.metrics.targetAutoDisabled();
      logger.warn('notification target auto-disabled: every attempt failed for TARGET_AUTO_DISABLE_AFTER', {
        targetId: delivery.targetId,
        failingSince: target && !(target instanceof CredentialsCipherError) ? target.failingSince : null,
      });
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

/** Each auth header's value, and its credentials without the scheme (`Basic …`, `Bearer …`). */
function credentialsIn(headers: Record<string, string>): string[] {
  return Object.values(headers).flatMap((value) => [value, ...(/^\S+\s+(\S.*)$/.exec(value)?.slice(1) ?? [])]);
}

/** HTTP 200, and only 200, is delivered (spec: "Expected response: HTTP 200 OK"). */
function resultOf(response: CallbackResponse): AttemptResult {
  const { status, body: responseBody } = response;
  if (status === 200) return { delivered: true, statusCode: 200, responseBody };
  if (status >= 300 && status < 400) {
    return { delivered: false, errorKind: 'redirect', errorMessage: `the target redirected (HTTP ${status}); redirects are not followed`, retryable: true, statusCode: status, responseBody };
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

/** The failure an error stands for. Every message here is free of secrets (see each error's class). */
function failureOf(error: unknown): AttemptResult {
  const failed = (errorKind: AttemptErrorKind, errorMessage: string, retryable = true): AttemptResult => ({ delivered: false, errorKind, errorMessage, retryable });
  // Retried, a refused address too: DNS answers change, and the next attempt checks it again.
  if (error instanceof OutboundRequestError && error.kind !== 'response_too_large') return failed(error.kind, error.message);
  if (error instanceof TokenRequestError) return failed(error.kind === 'address_refused' ? 'address_refused' : 'oauth', error.message);
  if (error instanceof TokenWaitTimeoutError) return failed('oauth', error.message);
  if (error instanceof AuthConfigurationError || error instanceof UnknownAuthModeError || error instanceof CredentialsCipherError) {
    return failed('configuration', error.message, false);
  }
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return failed('internal', message.slice(0, 500));
}
