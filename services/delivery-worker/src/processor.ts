import { performance } from 'node:perf_hooks';
import { AuthConfigurationError, TokenRequestError, TokenWaitTimeoutError, UnknownAuthModeError, type CallbackAuthStrategy } from '@herald/callback-auth';
import { CredentialsCipherError, type AttemptOutcome, type DeliveryTarget, type DeliveryWork, type NewDeliveryAttempt } from '@herald/db';
import { maskQueryValues, signingSecretsInUse, standardWebhookHeaders, type DeliveryRef } from '@herald/domain';
import { redactForeignText, type Logger } from '@herald/logging';
import type { HeraldMetrics } from '@herald/metrics';
import { OutboundRequestError } from '@herald/outbound';
import type { Admission, DeferralReason, GateVerdict } from '@herald/queue';
import { DelayedError, UnrecoverableError } from 'bullmq';
import type { CallbackResponse, SendCallback } from './callback-sender';
import { CallbackAttemptError, type AttemptErrorKind } from './errors/callback-attempt-error';
import { messageAsStack } from './errors/message-as-stack';

/** What the processor reads of a BullMQ job, and the one thing it does to it (defer it). */
export interface DeliveryJob {
  /** The delivery id (producers set it); the gate counts the job under it. */
  readonly id?: string | undefined;
  readonly data: DeliveryRef;
  /** Tries BullMQ counted before this one (a replayed job keeps its count unless reset). */
  readonly attemptsMade: number;
  readonly opts: { readonly attempts?: number };
  /** Sends the job back to the delayed set until `timestamp`, without spending an attempt (BullMQ). */
  moveToDelayed(timestamp: number, token?: string): Promise<void>;
}

/** The job's return value (kept by BullMQ for the dashboard). Failures are thrown instead. */
export type DeliveryOutcome = { outcome: 'delivered'; attempt: number; statusCode: 200 } | { outcome: 'already-delivered' };

/** The processor's reads and writes, one delivery at a time (the worker batches them underneath). */
export interface DeliveryStore {
  /** The delivery with its target and event; null when there is no such delivery. */
  load(deliveryId: string): Promise<DeliveryWork | null>;
  /** Records one attempt and the delivery's new state; returns the attempt's number. */
  record(deliveryId: string, attempt: NewDeliveryAttempt, outcome: AttemptOutcome): Promise<number>;
  /** Records that the delivery's job was sent back to wait without a POST (not an attempt). */
  recordDeferral(deliveryId: string, reason: DeferralReason): Promise<void>;
}

/**
 * The target gate, one job at a time (packages/queue target-gate; the worker batches underneath):
 * lets a job in to its target or defers it (in-flight limit, circuit breaker), and is told how
 * each job it let in ended. `release` never rejects: a slot it could not free runs out with its lease.
 */
export interface DeliveryGate {
  admit(targetId: string, jobId: string): Promise<Admission>;
  release(targetId: string, jobId: string, verdict: GateVerdict, durationMs: number): Promise<void>;
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
  gate: DeliveryGate;
  logger: Logger;
  /** Counts each recorded attempt by outcome, with its duration, and each deferral by reason. */
  metrics: Pick<HeraldMetrics, 'deliveryAttempt' | 'deliveryDeferred'>;
}

/** Where an attempt's callback went, once it went out. */
type SentTo = { url?: string };

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
 * The delivery use case: one attempt of one delivery. First the target gate: a job whose target
 * is at its in-flight limit, or whose target's breaker is open, is moved back to the delayed set
 * and ends with DelayedError, which BullMQ does not count as an attempt; nothing is sent, only the
 * deferral is recorded. Otherwise it loads the delivery (a delivered one is not
 * sent again) with its target and its event; sends one POST of the event, exactly as GET /events shows
 * it, to the target's current URL; records the attempt and the delivery's new state. Delivered
 * only on HTTP 200; any other outcome is recorded and thrown, so that BullMQ retries with its
 * backoff, or, when the target is gone or its settings unusable, fails the job at once.
 */
export function createDeliveryProcessor(deps: DeliveryProcessorDependencies): (job: DeliveryJob, token?: string) => Promise<DeliveryOutcome> {
  const { logger } = deps;

  /** Sends the job back to wait; the job is never the worker's again in this run. */
  const defer = async (job: DeliveryJob, token: string | undefined, admission: Extract<Admission, { admitted: false }>): Promise<never> => {
    const { deliveryId, targetId } = job.data;
    await job.moveToDelayed(Date.now() + admission.delayMs, token);
    deps.metrics.deliveryDeferred(admission.reason);
    if (logger.isLevelEnabled('debug')) logger.debug('callback deferred', { deliveryId, targetId, reason: admission.reason, delayMs: admission.delayMs });
    // The job is already delayed: a deferral the database missed is only missing from the history.
    await deps.deliveries.recordDeferral(deliveryId, admission.reason).catch((error: unknown) => {
      logger.warn('could not record a deferral', { deliveryId, error: error instanceof Error ? error.message : String(error) });
    });
    throw new DelayedError(`deferred: ${admission.reason}`);
  };

  /**
   * One POST, signed; the timestamp is that of the POST itself, so a receiver can check it for
   * freshness. The credentials its auth headers carry are added to `sentCredentials`; its URL, once
   * it goes out, to `sent`.
   */
  const post = async (target: DeliveryTarget, eventId: string, body: string, auth: CallbackAuthStrategy, sentCredentials: string[], sent: SentTo): Promise<CallbackResponse> => {
    const authHeaders = await auth.headers();
    sentCredentials.push(...credentialsIn(authHeaders));
    const now = new Date();
    sent.url = target.url;
    return deps.send({
      url: target.url,
      body,
      headers: {
        'content-type': 'application/json',
        // Standard Webhooks headers: the id is the event's, the same on every retry, so the
        // merchant can drop a callback it has already processed; the signature (with the previous
        // secret too during a rotation's grace period) proves the body came from Herald.
        ...standardWebhookHeaders({ id: eventId, timestamp: Math.floor(now.getTime() / 1000), body }, signingSecretsInUse(target.signing.secrets, target.signing.graceEndsAt, now)),
        ...authHeaders,
      },
    });
  };

  const attempt = async ({ delivery, target, event }: DeliveryWork, sent: SentTo): Promise<AttemptResult> => {
    // Credentials no key decrypts: failureOf makes it a `configuration` failure, not retried.
    if (target instanceof CredentialsCipherError) throw target;
    if (!target || target.deletedAt !== null || !target.enabled) {
      const state = !target ? 'no longer exists' : target.deletedAt !== null ? 'was deleted' : 'is switched off';
      return { delivered: false, errorKind: 'target_unavailable', errorMessage: `the notification target ${state}; not sent`, retryable: false };
    }
    if (!event) return { delivered: false, errorKind: 'internal', errorMessage: `event ${delivery.eventId} does not exist`, retryable: false };
    const body = JSON.stringify(event);
    const auth = deps.authFor(target);
    // What the merchant's answer must not be stored with, should it echo the request back.
    const credentials = target.auth.mode === 'none' ? [] : [target.auth.password];

    let response = await post(target, event.id, body, auth, credentials, sent);
    if (response.status === 401 && auth.mode === 'oauth') {
      // The token may have been revoked before it expired: one more POST with a fresh token, within
      // this attempt. A second 401 is the merchant's answer.
      await auth.invalidate();
      response = await post(target, event.id, body, auth, credentials, sent);
    }
    return resultOf({ ...response, body: redactForeignText(response.body, credentials) });
  };

  const attemptJob = async (job: DeliveryJob, release: (verdict: GateVerdict) => Promise<void>): Promise<DeliveryOutcome> => {
    const { deliveryId } = job.data;
    const work = await deps.deliveries.load(deliveryId);
    // Nothing to record an attempt against: the job is the only trace, in the failed set.
    if (!work) throw messageAsStack(new UnrecoverableError(`delivery ${deliveryId} does not exist`));
    const { delivery } = work;
    if (delivery.status === 'succeeded') return { outcome: 'already-delivered' };

    const startedAt = new Date();
    const started = performance.now();
    let result: AttemptResult;
    const sent: SentTo = {};
    try {
      result = await attempt(work, sent);
    } catch (error) {
      result = failureOf(error);
    }
    void release(verdictOf(result));
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
        ...(sent.url === undefined ? {} : { url: maskQueryValues(sent.url) }),
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
    if (!result.retryable) throw messageAsStack(new UnrecoverableError(result.errorMessage));
    throw new CallbackAttemptError(result.errorKind, result.errorMessage, number, result.statusCode, result.retryAfterMs);
  };

  return async (job, token) => {
    const { deliveryId, targetId } = job.data;
    const jobId = job.id ?? deliveryId;
    const admission = await deps.gate.admit(targetId, jobId);
    if (!admission.admitted) return defer(job, token, admission);
    // The slot is freed as soon as the POST is over (with its verdict), or when the job ends some other way.
    const admittedAt = performance.now();
    let released: Promise<void> | undefined;
    const release = (verdict: GateVerdict): Promise<void> => (released ??= deps.gate.release(targetId, jobId, verdict, performance.now() - admittedAt));
    try {
      return await attemptJob(job, release);
    } finally {
      await release('neutral');
    }
  };
}

/** What the attempt tells the target's circuit breaker. */
function verdictOf(result: AttemptResult): GateVerdict {
  if (result.delivered) return 'success';
  // No answer at all: the failures that hold a worker slot until they end.
  if (result.errorKind === 'timeout' || result.errorKind === 'connection' || result.errorKind === 'tls') return 'failure';
  if (result.errorKind === 'http_status' || result.errorKind === 'redirect') return 'answer';
  return 'neutral';
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
