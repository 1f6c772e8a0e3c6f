import { hostname } from 'node:os';
import { createAuthStrategy, type CallbackAuthStrategy } from '@herald/callback-auth';
import { createCallbackSender } from '@herald/callbacks';
import type { WorkerConfig } from '@herald/config';
import { credentialsCipherFromConfig, deliveryAttemptRepository, type AttemptRecord, type DeferralRecord, type DatabasePool, type DeliveryTarget } from '@herald/db';
import type { DeliveryRef } from '@herald/domain';
import type { Logger } from '@herald/logging';
import type { HeraldMetrics } from '@herald/metrics';
import { createConnectGuard, createOutboundClient, type OutboundClient } from '@herald/outbound';
import { createTargetGate, DELIVERIES_QUEUE, deliveryBackoffStrategy, type Admission, type BreakerChange, type GateEntry, type GateRelease, type RedisConnection } from '@herald/queue';
import { Worker } from 'bullmq';
import { createCoalescer } from './coalescer';
import { createDeliveryProcessor, type DeliveryGate, type DeliveryOutcome, type DeliveryStore } from './processor';

/**
 * How many times a job whose worker died (its lock expired) is taken up again; one stall more and
 * BullMQ fails it ("job stalled more than allowable limit"). A callback has no side effect on
 * Herald's side that a re-run would repeat (the merchant deduplicates on webhook-id), so the limit
 * is only a guard against a job that kills its worker every time. See docs/delivery.md.
 */
const MAX_STALLED_COUNT = 3;

/**
 * Statements of each kind (load, record) one worker runs at once. Jobs that need one while both
 * run wait for the next, which carries all of them: the batches grow with the load by themselves.
 */
const STATEMENTS_IN_FLIGHT = 2;

/**
 * Margin of a gate slot's lease over the longest an attempt can take (two POSTs, after a 401, and a
 * token request): the load before and the time the worker's own event loop may lag. Only a job
 * whose worker died keeps its slot (or the breaker's probe turn) until the lease runs out.
 */
const GATE_LEASE_MARGIN_MS = 30_000;

/**
 * How long a freed gate slot may wait to be sent with the next admission: a busy worker admits a
 * job every millisecond or so, and the job that ended still records its attempt meanwhile, so a
 * release rides on an admission's script run instead of costing one of its own (about half the
 * gate's Redis and worker CPU per callback). The slot is held that much longer at most.
 */
const GATE_RELEASE_LINGER_MS = 5;

/**
 * How long after the gate turned a job of a target away the worker stops loading that target's
 * deliveries before the gate's answer (DeliveryGate.expectsAdmission): this, or the delay the gate
 * gave if that is longer. Most targets are never turned away; the others cost no load while they wait.
 */
const TURNED_AWAY_MEMORY_MS = 1_000;
/**
 * Targets turned away lately that the worker remembers before it drops the expired ones; then
 * again each time their number doubles, so that a sweep costs O(1) per target remembered.
 */
const TURNED_AWAY_SWEEP_SIZE = 1_000;

export interface DeliveryWorkerDependencies {
  config: WorkerConfig;
  /** The pool every statement of the worker runs on. Not closed here. */
  pool: DatabasePool;
  /**
   * A `worker`-role connection: commands wait for Redis to come back instead of failing. BullMQ
   * uses it (and a blocking copy it makes), and so does the OAuth token cache. Not closed here.
   */
  connection: RedisConnection;
  logger: Logger;
  /** Where attempts, deferrals, auto-disabled targets and OAuth token requests are counted. */
  metrics: Pick<HeraldMetrics, 'deliveryAttempt' | 'deliveryDeferred' | 'oauthTokenRequested' | 'targetAutoDisabled'>;
}

export type DeliveryWorker = Worker<DeliveryRef, DeliveryOutcome, string>;

/**
 * The BullMQ worker of the deliveries queue: takes up to WORKER_CONCURRENCY jobs at once and runs
 * the delivery processor on each. Any number of these, in any number of processes and machines,
 * share the queue: BullMQ hands each job to one worker at a time, and the OAuth token cache lives
 * in Redis. `close()` takes no new job and waits for the jobs in flight.
 */
export function startDeliveryWorker(deps: DeliveryWorkerDependencies): DeliveryWorker {
  const { config, pool, logger } = deps;
  const guard = createConnectGuard({ allowPrivate: config.allowPrivateTargets, hostAllowlist: config.targetHostAllowlist });
  // Callbacks (the hot path) over Node's http client, token requests (a cold path) over axios.
  const outbound = createOutboundClient({ guard });
  const tokenOutbound = createOutboundClient({ guard, transport: 'axios' });
  const processor = createDeliveryProcessor({
    deliveries: batchedDeliveryStore(pool, config),
    authFor: (target) => authStrategyFor(target, deps, tokenOutbound),
    send: createCallbackSender({ timeoutMs: config.callback.timeoutMs, responseMaxBytes: config.callback.responseMaxBytes, outbound }),
    gate: batchedTargetGate(deps),
    logger,
    metrics: deps.metrics,
    autoDisableAfterMs: config.targetAutoDisableAfterMs,
  });
  const worker: DeliveryWorker = new Worker(DELIVERIES_QUEUE, (job, token) => processor(job, token), {
    connection: deps.connection,
    prefix: config.queuePrefix,
    name: `${hostname()}:${process.pid}`,
    concurrency: config.worker.concurrency,
    lockDuration: config.worker.lockDurationMs,
    stalledInterval: config.worker.stalledIntervalMs,
    maxStalledCount: MAX_STALLED_COUNT,
    // Delivery jobs carry the custom backoff type (packages/queue deliveryJobOptions): every
    // retry's delay comes from here, exponential with jitter or a merchant's Retry-After.
    settings: { backoffStrategy: deliveryBackoffStrategy(config.retry) },
  });
  worker.on('error', (error) => logger.warn('delivery worker error', { error: error.message }));
  return worker;
}

/**
 * The processor's reads and writes, gathered across the jobs this worker runs at once: one
 * statement loads the deliveries, targets and events of many jobs, one records their attempts.
 */
function batchedDeliveryStore(pool: DatabasePool, config: WorkerConfig): DeliveryStore {
  const repository = deliveryAttemptRepository(pool, credentialsCipherFromConfig(config));
  const options = { maxBatch: config.worker.concurrency, maxInFlight: STATEMENTS_IN_FLIGHT };
  const load = createCoalescer(async (ids: string[]) => {
    const found = await repository.loadForAttempts(ids);
    return ids.map((id) => found.get(id) ?? null);
  }, options);
  const record = createCoalescer((records: AttemptRecord[]) => repository.recordAttempts(records), options);
  // One statement in flight at a time: deferrals are history, never worth a second connection.
  const recordDeferral = createCoalescer(async (records: DeferralRecord[]) => {
    await repository.recordDeferrals(records);
    return records.map(() => undefined);
  }, { maxBatch: 10 * config.worker.concurrency, maxInFlight: 1 });
  return {
    load,
    recordDeferral: (deliveryId, reason) => recordDeferral({ deliveryId, reason, at: new Date() }),
    async record(attempt) {
      const recorded = await record(attempt);
      if (recorded === undefined) throw new Error(`Delivery ${attempt.deliveryId} does not exist.`);
      return recorded;
    },
  };
}

/**
 * The target gate (packages/queue) over the worker's Redis connection, its admissions and releases
 * gathered across the jobs this worker starts and ends at once: one script run per batch of both. If
 * Redis answers an admission with an error (not an outage: the worker's connection waits those
 * out), the job goes in ungated rather than fail; a release that fails leaves the slot to its lease.
 */
export function batchedTargetGate(deps: Pick<DeliveryWorkerDependencies, 'config' | 'connection' | 'logger'>): DeliveryGate {
  const { config, logger } = deps;
  const gate = createTargetGate(deps.connection, {
    queuePrefix: config.queuePrefix,
    settings: {
      ...config.targetGate,
      leaseMs: 2 * config.callback.timeoutMs + config.callback.tokenTimeoutMs + GATE_LEASE_MARGIN_MS,
    },
  });
  // One script run carries the admissions and the releases gathered meanwhile (scripts.ts): a
  // worker whose jobs end and start continuously pays one round trip per batch, not two. A release
  // lingers for the next admission (GATE_RELEASE_LINGER_MS).
  type GateCall = { admit: GateEntry } | { release: GateRelease };
  const settle = createCoalescer(
    async (calls: GateCall[]): Promise<Array<Admission | BreakerChange>> => {
      const releases = calls.flatMap((call) => ('release' in call ? [call.release] : []));
      const entries = calls.flatMap((call) => ('admit' in call ? [call.admit] : []));
      const { changes, admissions } = await gate.settle(releases, entries);
      changes.forEach((change, i) => {
        const { targetId } = releases[i]!;
        if (change === 'opened') logger.warn('target circuit breaker opened; its callbacks wait without attempts', { targetId });
        else if (change === 'reopened') logger.warn('target circuit breaker re-opened: the probe callback failed', { targetId });
        else if (change === 'closed') logger.info('target circuit breaker closed: the probe callback was delivered', { targetId });
      });
      let released = 0;
      let admitted = 0;
      return calls.map((call) => ('release' in call ? changes[released++] : admissions[admitted++]!));
    },
    { maxBatch: 2 * config.worker.concurrency, maxInFlight: STATEMENTS_IN_FLIGHT },
  );
  // Targets whose jobs the gate turned away lately, with until when (ms).
  const turnedAway = new Map<string, number>();
  let sweepAtSize = TURNED_AWAY_SWEEP_SIZE;
  const rememberTurnedAway = (targetId: string, delayMs: number): void => {
    const now = Date.now();
    if (turnedAway.size >= sweepAtSize) {
      for (const [id, until] of turnedAway) if (until <= now) turnedAway.delete(id);
      sweepAtSize = Math.max(TURNED_AWAY_SWEEP_SIZE, 2 * turnedAway.size);
    }
    turnedAway.set(targetId, now + Math.max(delayMs, TURNED_AWAY_MEMORY_MS));
  };
  return {
    expectsAdmission(targetId) {
      const until = turnedAway.get(targetId);
      if (until === undefined) return true;
      if (until > Date.now()) return false;
      turnedAway.delete(targetId);
      return true;
    },
    async admit(targetId, jobId): Promise<Admission> {
      try {
        const admission = (await settle({ admit: { targetId, jobId } })) as Admission;
        if (!admission.admitted) rememberTurnedAway(targetId, admission.delayMs);
        // A probe means the breaker is half-open: the target's other jobs are about to be turned away.
        else if (admission.probe) rememberTurnedAway(targetId, 0);
        return admission;
      } catch (error) {
        logger.warn('target gate unavailable; callback sent ungated', { targetId, error: error instanceof Error ? error.message : String(error) });
        return { admitted: true, probe: false };
      }
    },
    async release(targetId, jobId, verdict, durationMs) {
      try {
        await settle({ release: { targetId, jobId, verdict, durationMs } }, GATE_RELEASE_LINGER_MS);
      } catch (error) {
        logger.warn('target gate release failed; the slot frees when its lease ends', { targetId, error: error instanceof Error ? error.message : String(error) });
      }
    },
  };
}

function authStrategyFor(target: DeliveryTarget, deps: DeliveryWorkerDependencies, outbound: OutboundClient): CallbackAuthStrategy {
  return createAuthStrategy(
    { targetId: target.id, ...target.auth },
    {
      redis: deps.connection,
      keyPrefix: `${deps.config.queuePrefix}:`,
      // Keys the token cache's key names and encryption; a rotation only means each token is fetched once more.
      tokenCacheSecret: deps.config.secretsKey,
      tokenRequestTimeoutMs: deps.config.callback.tokenTimeoutMs,
      onTokenRequest: () => deps.metrics.oauthTokenRequested(),
      outbound,
    },
  );
}
