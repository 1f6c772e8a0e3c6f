import { performance } from 'node:perf_hooks';
import type { CallbackAuthStrategy } from '@herald/callback-auth';
import { callbackFailure, sendCallback, type CallbackResult, type SendCallback } from '@herald/callbacks';
import type { AttemptOutcome, AttemptRecord, DeliveryTarget, DeliveryWork, RecordedAttempt } from '@herald/db';
import {
  AUTO_DISABLED_REASON,
  decideAttempt,
  maskQueryValues,
  resolveDeliveryPolicy,
  signingSecretsInUse,
  type AttemptDecision,
  type DeliveryPolicyDefaults,
  type DeliveryRef,
  type ResolvedDeliveryPolicy,
} from '@herald/domain';
import type { Logger } from '@herald/logging';
import type { HeraldMetrics } from '@herald/metrics';
import type { DeferralReason } from '@herald/domain';
import { DELIVERIES_QUEUE, type Admission, type DeliveryJobData, type GateVerdict, type WorkerGate } from '@herald/queue';
import {
  contextOfTraceparent,
  contextWith,
  endSpan,
  errorTypeOf,
  inSpan,
  MESSAGING,
  MESSAGING_SYSTEM_BULLMQ,
  postgresAttributes,
  SpanKind,
  startSpan,
  traceLogFields,
  type TraceContext,
  type Tracer,
} from '@herald/telemetry';
import { DelayedError, UnrecoverableError } from 'bullmq';
import { CallbackAttemptError, LastCallbackAttemptError } from './errors/callback-attempt-error';
import { messageAsStack } from './errors/message-as-stack';
import type { ObjectOrder } from './object-order';

/** What the processor reads of a BullMQ job, and the one thing it does to it (defer it). */
export interface DeliveryJob {
  /** The delivery id (producers set it); the gate counts the job under it. */
  readonly id?: string | undefined;
  /** The delivery, and the trace of the enqueue when it was traced. */
  readonly data: DeliveryJobData;
  /** Tries BullMQ counted before this one (a replayed job keeps its count unless reset). */
  readonly attemptsMade: number;
  /** Times BullMQ made the job active, this time included: a deferral is one that counts no try. */
  readonly attemptsStarted: number;
  readonly opts: { readonly attempts?: number };
  /** Sends the job back to the delayed set until `timestamp`, without spending an attempt (BullMQ). */
  moveToDelayed(timestamp: number, token?: string): Promise<void>;
}

/** The job's return value (kept by BullMQ for the dashboard). Failures are thrown instead. */
export type DeliveryOutcome = { outcome: 'delivered'; attempt: number; statusCode: 200 } | { outcome: 'already-delivered' };

/** The processor's reads and writes, one delivery at a time (the worker batches them underneath). */
export interface DeliveryStore {
  /** The job's delivery with its target and event; null when there is no such delivery. */
  load(job: DeliveryRef): Promise<DeliveryWork | null>;
  /**
   * Records one attempt, the delivery's new state and, when it may change, its target's health;
   * `disableTarget` asks for the target to be auto-disabled. Returns the attempt's number and
   * whether it switched the target off.
   */
  record(record: AttemptRecord): Promise<RecordedAttempt>;
  /** Records that the delivery's job was sent back to wait without a POST (not an attempt). */
  recordDeferral(job: DeliveryRef, reason: DeferralReason): Promise<void>;
}

/**
 * The target gate as the processor uses it, one job at a time (packages/queue worker-gate.ts; the
 * batching is underneath): lets a job in to its target or defers it (in-flight limit, circuit
 * breaker), and is told how each job it let in ended. Closing it is the worker's business.
 */
type DeliveryGate = Omit<WorkerGate, 'close'>;

export interface DeliveryProcessorDependencies {
  deliveries: DeliveryStore;
  /**
   * The auth strategy of a target, built for each attempt: an OAuth strategy's `invalidate()`
   * forgets the token that instance handed out, so an instance shared by concurrent attempts would
   * let one attempt's 401 throw away the fresh token another just fetched.
   */
  authFor(target: DeliveryTarget, parent: TraceContext | undefined): CallbackAuthStrategy;
  send: SendCallback;
  gate: DeliveryGate;
  /** Ordered delivery (object-order.ts): parks a job behind its object's earlier callback, and wakes it after that one's final outcome. */
  order: ObjectOrder;
  logger: Logger;
  /** Counts each recorded attempt by outcome, with its duration, each deferral by reason, and targets switched off. */
  metrics: Pick<HeraldMetrics, 'deliveryAttempt' | 'deliveryDeferred' | 'targetAutoDisabled'>;
  /** TARGET_AUTO_DISABLE_AFTER in ms: how long every attempt to a target may fail before it is switched off; 0 never. */
  autoDisableAfterMs: number;
  /**
   * What a target's delivery policy falls back on (DELIVERY_ATTEMPTS, DELIVERY_BACKOFF_MAX_MS,
   * CALLBACK_TIMEOUT_MS, TARGET_MAX_IN_FLIGHT): each attempt resolves the policy its target has now.
   */
  policyDefaults: DeliveryPolicyDefaults;
  /**
   * RETRY_AFTER_MAX_MS: the longest a receiver's `Retry-After` (on a 429 or 503) pauses its whole
   * target (its jobs wait without attempts; the gate's GateRelease.pauseMs).
   */
  pauseMaxMs: number;
  /**
   * Makes a span of each job and of its steps (gate, load, token request, POST, record), in the
   * trace its job carries; none when undefined (tracing off): then a job costs one branch more.
   */
  tracer?: Tracer | undefined;
}

/** Where an attempt's callback went, once it went out. */
type SentTo = { url?: string };

/** What step 1 found sendable: the delivery's target, usable, and its event's JSON. */
interface Ready {
  readonly ready: true;
  readonly work: DeliveryWork;
  readonly target: DeliveryTarget;
  readonly eventJson: string;
  /** The target's delivery policy in force for this attempt. */
  readonly policy: ResolvedDeliveryPolicy;
}

/** Step 1's answer: ready to send, or the failure that stops the attempt before any POST. */
type Prepared = Ready | { readonly ready: false; readonly failure: CallbackResult };

/** An attempt made: what the callback came to, what it makes of the delivery, and when. */
interface Attempt {
  readonly result: CallbackResult;
  readonly decision: AttemptDecision;
  readonly startedAt: Date;
  readonly durationSeconds: number;
  readonly sent: SentTo;
  /** The job's span, parent of the record's; undefined when untraced. */
  readonly trace: TraceContext | undefined;
}

// The attributes of the job's steps' spans, made once (see jobSpan for the job's own).
const LOAD_ATTRIBUTES = postgresAttributes('SELECT', 'deliveries');
const RECORD_ATTRIBUTES = postgresAttributes('INSERT', 'delivery_attempts');
const NO_ATTRIBUTES = Object.freeze({});
/** The conventions' name of a consumer's span: `{operation} {destination}`. */
const JOB_SPAN_NAME = `process ${DELIVERIES_QUEUE}`;

/** Most ordered targets a worker remembers (createDeliveryProcessor's orderedTargets). */
const ORDERED_TARGETS_KEPT = 10_000;

/** The delivery's stored status for each decision. */
const OUTCOME_OF: Record<AttemptDecision['next'], AttemptOutcome> = { delivered: 'succeeded', retry: 'pending', failed: 'failed' };

/**
 * Step 1, prepare: whether the attempt can be sent. A target gone, switched off or deleted, or
 * whose credentials no key decrypts, and an event gone, fail it before any POST, not retried.
 */
function prepare(work: DeliveryWork, defaults: DeliveryPolicyDefaults): Prepared {
  const loaded = work.target;
  // Credentials no key decrypts: a `configuration` failure, not retried until someone fixes SECRETS or the target.
  if (loaded.state === 'unreadable')
    return { ready: false, failure: { delivered: false, errorKind: 'configuration', errorMessage: loaded.message, retryable: false } };
  const target = loaded.state === 'ready' ? loaded.target : undefined;
  if (!target || target.deletedAt !== null || !target.enabled) {
    const state = !target
      ? 'no longer exists'
      : target.deletedAt !== null
        ? 'was deleted'
        : target.disabledReason === AUTO_DISABLED_REASON
          ? 'was auto-disabled after every attempt failed for too long (switch it on again once the endpoint is fixed, then replay)'
          : 'is switched off';
    return {
      ready: false,
      failure: { delivered: false, errorKind: 'target_unavailable', errorMessage: `the notification target ${state}; not sent`, retryable: false },
    };
  }
  if (work.eventJson === null) {
    return {
      ready: false,
      failure: { delivered: false, errorKind: 'internal', errorMessage: `event ${work.delivery.eventId} does not exist`, retryable: false },
    };
  }
  return { ready: true, work, target, eventJson: work.eventJson, policy: resolveDeliveryPolicy(target.delivery, defaults) };
}

/**
 * The delivery use case: one attempt of one delivery. First the target gate: a job whose target
 * is at its in-flight limit or rate, or whose target's breaker is open, is moved back to the
 * delayed set and ends with DelayedError, which BullMQ does not count as an attempt; nothing is
 * sent, only the deferral is recorded. Otherwise it loads the delivery (a delivered one is not sent
 * again) with its target and its event, while the gate decides when the gate expects to let the
 * job in. A job of a target with ordering `object` whose object has an earlier callback without
 * its final outcome is parked the same way until that one's outcome wakes it (object-order.ts);
 * such a target's jobs, once the worker knows it, load before they ask the gate. Then it sends one
 * POST of the event, exactly as GET /events shows it, to the target's current URL, and records the
 * attempt and the delivery's new state. Delivered only on HTTP 200; any other outcome is recorded
 * and thrown, so that BullMQ retries with its backoff (the target's delivery policy), or, when the
 * target is gone or its settings unusable, or the policy's attempts are spent, fails the job.
 */
export function createDeliveryProcessor(deps: DeliveryProcessorDependencies): (job: DeliveryJob, token?: string) => Promise<DeliveryOutcome> {
  const { logger } = deps;

  /** Sends the job back to wait; the job is never the worker's again in this run. */
  const defer = async (
    job: DeliveryJob,
    token: string | undefined,
    admission: Extract<Admission, { admitted: false }>,
    trace: TraceContext | undefined,
  ): Promise<never> => {
    const { deliveryId, targetId } = job.data;
    await job.moveToDelayed(Date.now() + admission.delayMs, token);
    deps.metrics.deliveryDeferred(admission.reason);
    if (logger.isLevelEnabled('debug'))
      logger.debug('callback deferred', { deliveryId, targetId, reason: admission.reason, delayMs: admission.delayMs, ...traceLogFields(trace) });
    // The job is already delayed: a deferral the database missed is only missing from the history.
    await deps.deliveries.recordDeferral(job.data, admission.reason).catch((error: unknown) => {
      logger.warn('could not record a deferral', { deliveryId, error: error instanceof Error ? error.message : String(error), ...traceLogFields(trace) });
    });
    throw new DelayedError(`deferred: ${admission.reason}`);
  };

  /**
   * Step 1b, wait (a target with ordering `object` only): a job whose object has an earlier
   * callback to the target with no final outcome yet is parked until that one's outcome wakes it;
   * it spends no attempt, and leaves its slot (released as neutral) to other jobs.
   */
  const waitForPredecessor = async (job: DeliveryJob, token: string | undefined, work: DeliveryWork): Promise<void> => {
    const { deliveryId, targetId } = job.data;
    const predecessor = await deps.order.waitForPredecessor({ deliveryId, storedAt: work.delivery.storedAt }, (until) => job.moveToDelayed(until, token));
    if (predecessor === null) return;
    deps.metrics.deliveryDeferred('awaiting_predecessor');
    if (logger.isLevelEnabled('debug'))
      logger.debug('callback waits for the previous callback of its object', { deliveryId, targetId, waitingFor: predecessor });
    throw new DelayedError('deferred: awaiting_predecessor');
  };

  /** Step 2, send: the POST (with its token request and the 401 retry); every failure becomes a result. */
  const send = async (ready: Ready, sent: SentTo, trace: TraceContext | undefined): Promise<CallbackResult> => {
    const { target, work } = ready;
    try {
      return await sendCallback(
        // The event exactly as GET /events shows it, to the target's current URL, signed with the
        // secrets in use now (the previous one too during a rotation's grace period).
        {
          url: target.url,
          webhookId: work.delivery.eventId,
          body: ready.eventJson,
          signingSecrets: signingSecretsInUse(target.signing.secrets, target.signing.graceEndsAt, new Date()),
          timeoutMs: ready.policy.timeoutMs,
        },
        // What the merchant's answer must not be stored with, should it echo the request back.
        {
          auth: deps.authFor(target, trace),
          // The POST's span goes under the job's (the outbound client makes it).
          send: trace === undefined ? deps.send : (request) => deps.send({ ...request, parent: trace }),
          knownSecrets: target.auth.mode === 'none' ? [] : [target.auth.password],
          onPost: (url) => {
            sent.url = url;
          },
        },
      );
    } catch (error) {
      return callbackFailure(error);
    }
  };

  /** Step 4, record: the attempt and the delivery's new state; then the job's result, or the error BullMQ retries or fails it with. */
  const record = async (work: DeliveryWork, attempt: Attempt, policy: ResolvedDeliveryPolicy): Promise<DeliveryOutcome> => {
    const { result, decision, startedAt, durationSeconds, sent, trace } = attempt;
    const { delivery } = work;
    const durationMs = Math.round(durationSeconds * 1000);
    // A failed attempt's message as decided (an auto-disable says so); a delivered one has none.
    const errorMessage = decision.next === 'delivered' ? '' : decision.errorMessage;
    const disableTarget = decision.next === 'failed' && decision.disableTarget;
    const recordAttempt = (): Promise<RecordedAttempt> =>
      deps.deliveries.record({
        deliveryId: delivery.id,
        storedAt: delivery.storedAt,
        attempt: {
          startedAt,
          durationMs,
          ...(result.statusCode === undefined ? {} : { statusCode: result.statusCode }),
          ...(result.delivered ? {} : { errorKind: result.errorKind, errorMessage }),
          ...(result.responseBody === undefined ? {} : { responseBody: result.responseBody }),
          ...(sent.url === undefined ? {} : { url: maskQueryValues(sent.url) }),
        },
        outcome: OUTCOME_OF[decision.next],
        disableTarget,
        // A target that keeps answering (or keeps failing) is not written at every batch.
        changesTargetHealth: decision.changesTargetHealth,
      });
    const recorded = await (trace === undefined || tracer === undefined
      ? recordAttempt()
      : inSpan(tracer, trace, 'INSERT delivery_attempts', SpanKind.CLIENT, RECORD_ATTRIBUTES, recordAttempt));
    const number = recorded.number;
    // A final outcome lets the next callback of the object go (an ordered target's); a lost wake-up is the reconciler's.
    if (decision.next !== 'retry' && work.target.state === 'ready' && work.target.target.ordering === 'object') {
      await deps.order.releaseSuccessors({ deliveryId: delivery.id, storedAt: delivery.storedAt }).catch((error: unknown) => {
        logger.warn('could not wake the callbacks waiting for this one; the reconciler will', {
          deliveryId: delivery.id,
          error: error instanceof Error ? error.message : String(error),
        });
      });
    }
    deps.metrics.deliveryAttempt(decision.next === 'delivered' ? 'delivered' : decision.next === 'failed' ? 'failed' : 'attempt_failed', durationSeconds);
    const context = { deliveryId: delivery.id, eventId: delivery.eventId, targetId: delivery.targetId, attempt: number, durationMs, ...traceLogFields(trace) };
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
        failingSince: work.target.state === 'ready' ? work.target.target.failingSince : null,
        ...traceLogFields(trace),
      });
    }
    logger.warn(decision.next === 'failed' ? 'callback failed; no more attempts' : 'callback attempt failed; will retry', {
      ...context,
      errorKind: result.errorKind,
      statusCode: result.statusCode,
      error: errorMessage,
    });
    if (decision.next === 'failed' && decision.why === 'not-retryable') throw messageAsStack(new UnrecoverableError(errorMessage));
    // The policy's last attempt: failed for good, whatever BullMQ's attempts (a ceiling only).
    if (decision.next === 'failed') throw new LastCallbackAttemptError(result.errorKind, errorMessage, number, result.statusCode);
    throw new CallbackAttemptError(result.errorKind, errorMessage, number, result.statusCode, result.retryAfterMs, policy.maxBackoffMs);
  };

  const attemptJob = async (
    job: DeliveryJob,
    token: string | undefined,
    loading: Promise<DeliveryWork | null>,
    release: (verdict: GateVerdict, pauseMs?: number) => Promise<void>,
    trace: TraceContext | undefined,
  ): Promise<DeliveryOutcome> => {
    const { deliveryId } = job.data;
    const work = await loading;
    // Nothing to record an attempt against: the job is the only trace, in the failed set.
    if (!work) throw messageAsStack(new UnrecoverableError(`delivery ${deliveryId} does not exist`));
    if (work.delivery.status === 'succeeded') return { outcome: 'already-delivered' };
    rememberOrdering(work);

    const startedAt = new Date();
    const started = performance.now();
    const sent: SentTo = {};
    const prepared = prepare(work, deps.policyDefaults);
    // A target gone or unusable fails the attempt for good: its policy matters no more.
    const policy = prepared.ready ? prepared.policy : resolveDeliveryPolicy({}, deps.policyDefaults);
    // The target's limit as its policy says now: this worker's next admissions of it carry it.
    deps.gate.setLimit(job.data.targetId, { maxInFlight: policy.maxInFlight, maxRatePerSecond: policy.maxRatePerSecond });
    if (prepared.ready && work.predecessorId !== null) await waitForPredecessor(job, token, work);
    const result = prepared.ready ? await send(prepared, sent, trace) : prepared.failure;
    void release(verdictOf(result), pauseOf(result, deps.pauseMaxMs));
    const durationSeconds = (performance.now() - started) / 1000;
    // Step 3, decide: a pure rule of the domain.
    const decision = decideAttempt({
      ...(result.delivered
        ? { delivered: true }
        : { delivered: false, errorKind: result.errorKind, errorMessage: result.errorMessage, retryable: result.retryable }),
      startedAt,
      targetHealth: work.target.state === 'ready' ? work.target.target : undefined,
      attemptsMade: job.attemptsMade,
      // The target's policy now; a job enqueued before policies with fewer BullMQ attempts keeps its own bound.
      maxAttempts: Math.min(policy.attempts, job.opts.attempts ?? policy.attempts),
      autoDisableAfterMs: deps.autoDisableAfterMs,
    });
    return record(work, { result, decision, startedAt, durationSeconds, sent, trace }, policy);
  };

  /**
   * Targets this worker saw deliver in order (ordering `object`), learnt from their loads: their
   * jobs look for a pending predecessor before they ask the gate, so that a job that is to wait
   * takes no slot and costs the gate nothing. Bounded: past ORDERED_TARGETS_KEPT it starts again.
   */
  const orderedTargets = new Set<string>();
  const rememberOrdering = (work: DeliveryWork): void => {
    if (work.target.state !== 'ready') return;
    const { id, ordering } = work.target.target;
    if (ordering === 'none') orderedTargets.delete(id);
    else if (!orderedTargets.has(id)) {
      if (orderedTargets.size >= ORDERED_TARGETS_KEPT) orderedTargets.clear();
      orderedTargets.add(id);
    }
  };

  const { tracer } = deps;
  /** The job's delivery, read in a span of the job's trace when it has one. */
  const load = (job: DeliveryJob, trace: TraceContext | undefined): Promise<DeliveryWork | null> =>
    trace === undefined || tracer === undefined
      ? deps.deliveries.load(job.data)
      : inSpan(tracer, trace, 'SELECT deliveries', SpanKind.CLIENT, LOAD_ATTRIBUTES, () => deps.deliveries.load(job.data));
  /** The gate's answer, in a span of the job's trace when it has one (the gate's Redis script runs batched with other jobs'). */
  const admit = async (job: DeliveryJob, jobId: string, trace: TraceContext | undefined): Promise<Admission> => {
    const { targetId } = job.data;
    const retried = job.attemptsStarted > job.attemptsMade + 1;
    if (trace === undefined || tracer === undefined) return deps.gate.admit(targetId, jobId, retried);
    // The job's span names the target.
    const span = startSpan(tracer, trace, 'target-gate admit', SpanKind.INTERNAL, NO_ATTRIBUTES);
    try {
      const admission = await deps.gate.admit(targetId, jobId, retried);
      span.setAttribute('herald.gate.admitted', admission.admitted);
      if (!admission.admitted) span.setAttribute('herald.gate.deferral_reason', admission.reason);
      endSpan(span);
      return admission;
    } catch (error) {
      endSpan(span, errorTypeOf(error));
      throw error;
    }
  };

  const processJob = async (job: DeliveryJob, token: string | undefined, trace: TraceContext | undefined): Promise<DeliveryOutcome> => {
    const { targetId } = job.data;
    if (orderedTargets.has(targetId)) {
      const work = await load(job, trace);
      if (!work || work.predecessorId === null || work.delivery.status === 'succeeded' || !prepare(work, deps.policyDefaults).ready)
        return admitThenAttempt(job, token, Promise.resolve(work), trace);
      // Parks the job (DelayedError) unless the predecessor ended meanwhile: then it goes on.
      await waitForPredecessor(job, token, work);
      return admitThenAttempt(job, token, Promise.resolve({ ...work, predecessorId: null }), trace);
    }
    // A job of a target the gate lets in (the usual case) loads its delivery meanwhile: one round
    // trip less before its POST. A target whose jobs were turned away lately waits for the answer,
    // so that a busy or broken target's deferred jobs cost the database nothing.
    // A target this worker has not loaded yet is loaded first, whatever the gate expects: its
    // in-flight limit (its delivery policy) must reach the gate with its first admission.
    const knowsLimit = deps.gate.knowsLimit(targetId);
    const early = !knowsLimit || deps.gate.expectsAdmission(targetId) ? load(job, trace) : undefined;
    // Awaited below when the job goes in; a job turned away drops it, and so its failure.
    early?.catch(() => undefined);
    if (!knowsLimit) {
      // A load that failed fails the attempt below; meanwhile the gate applies TARGET_MAX_IN_FLIGHT.
      const work = await early!.catch(() => null);
      const target = work?.target.state === 'ready' ? work.target.target : undefined;
      if (target) {
        const { maxInFlight, maxRatePerSecond } = resolveDeliveryPolicy(target.delivery, deps.policyDefaults);
        deps.gate.setLimit(targetId, { maxInFlight, maxRatePerSecond });
      }
    }
    return admitThenAttempt(job, token, early, trace);
  };

  /** Asks the gate, then makes the attempt, its delivery `loaded` already or loaded once let in. */
  async function admitThenAttempt(
    job: DeliveryJob,
    token: string | undefined,
    loaded: Promise<DeliveryWork | null> | undefined,
    trace: TraceContext | undefined,
  ): Promise<DeliveryOutcome> {
    const { deliveryId, targetId } = job.data;
    const jobId = job.id ?? deliveryId;
    const admission = await admit(job, jobId, trace);
    if (!admission.admitted) return defer(job, token, admission, trace);
    // The slot is freed as soon as the POST is over (with its verdict), or when the job ends some other way.
    const admittedAt = performance.now();
    let released: Promise<void> | undefined;
    const release = (verdict: GateVerdict, pauseMs?: number): Promise<void> =>
      (released ??= deps.gate.release(targetId, jobId, verdict, performance.now() - admittedAt, pauseMs));
    try {
      return await attemptJob(job, token, loaded ?? load(job, trace), release, trace);
    } finally {
      await release('neutral');
    }
  }

  // Tracing off: the job runs as is, with no span and no context made.
  if (tracer === undefined) return (job, token) => processJob(job, token, undefined);
  return async (job, token) => {
    const parent = contextOfTraceparent(job.data.traceparent);
    const span = jobSpan(tracer, job, parent);
    try {
      const outcome = await processJob(job, token, contextWith(parent, span));
      span.setAttribute('herald.delivery.outcome', outcome.outcome);
      endSpan(span);
      return outcome;
    } catch (error) {
      // A deferral is no failure: the job waits, and no attempt was spent.
      if (error instanceof DelayedError) endSpan(span);
      else endSpan(span, error instanceof CallbackAttemptError ? error.kind : errorTypeOf(error));
      throw error;
    }
  };
}

/**
 * The span of one run of a job (a messaging `process` span, the conventions' consumer span): a
 * child of the enqueue span whose `traceparent` the job carries, or the root of a trace of its own
 * for a job enqueued untraced (by the sweeper, the reconciler, a replay, or an untraced events-api).
 * Its attributes are ids: the delivery (the message's), its event and target, and the attempt's number.
 */
function jobSpan(tracer: Tracer, job: DeliveryJob, parent: TraceContext) {
  const { deliveryId, eventId, targetId } = job.data;
  return startSpan(tracer, parent, JOB_SPAN_NAME, SpanKind.CONSUMER, {
    [MESSAGING.system]: MESSAGING_SYSTEM_BULLMQ,
    [MESSAGING.operationType]: 'process',
    [MESSAGING.operationName]: 'process',
    [MESSAGING.destinationName]: DELIVERIES_QUEUE,
    // The job's id is its delivery's.
    [MESSAGING.messageId]: job.id ?? deliveryId,
    'herald.event.id': eventId,
    'herald.target.id': targetId,
    // This run's attempt if it makes one (BullMQ counts tries made before it).
    'herald.attempt': job.attemptsMade + 1,
  });
}

/**
 * How long the whole target is to wait, as its receiver asked: the `Retry-After` of a 429 or 503
 * (at most `maxMs`, RETRY_AFTER_MAX_MS); 0 for any other outcome.
 */
function pauseOf(result: CallbackResult, maxMs: number): number {
  if (result.delivered || result.retryAfterMs === undefined) return 0;
  if (result.statusCode !== 429 && result.statusCode !== 503) return 0;
  return Math.min(result.retryAfterMs, maxMs);
}

/** What the attempt tells the target's circuit breaker. */
function verdictOf(result: CallbackResult): GateVerdict {
  if (result.delivered) return 'success';
  // No answer at all: the failures that hold a worker slot until they end.
  if (result.errorKind === 'timeout' || result.errorKind === 'connection' || result.errorKind === 'tls') return 'failure';
  // The receiver pushes back: flow control narrows its window.
  if (result.errorKind === 'http_status' && (result.statusCode === 429 || result.statusCode === 503)) return 'throttled';
  if (result.errorKind === 'http_status' || result.errorKind === 'redirect') return 'answer';
  return 'neutral';
}
