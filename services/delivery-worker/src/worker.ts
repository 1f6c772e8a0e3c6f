import { hostname } from 'node:os';
import { createAuthStrategy, type CallbackAuthStrategy } from '@herald/callback-auth';
import { createCallbackSender } from '@herald/callbacks';
import type { WorkerConfig } from '@herald/config';
import { objectOrderRepository, type DatabasePool, type DeliveryTarget } from '@herald/db';
import { MAX_POLICY_TIMEOUT_MS } from '@herald/domain';
import type { Logger } from '@herald/logging';
import type { HeraldMetrics } from '@herald/metrics';
import { createConnectGuard, createOutboundClient, type OutboundClient } from '@herald/outbound';
import {
  createDeliveryQueue,
  createWorkerGate,
  DELIVERIES_QUEUE,
  deliveryBackoffStrategy,
  wakeParkedJobs,
  type DeliveryJobData,
  type DeliveryQueue,
  type RedisConnection,
  type WorkerGate,
} from '@herald/queue';
import type { TraceContext, Tracer } from '@herald/telemetry';
import { Worker } from 'bullmq';
import { batchedDeliveryStore } from './delivery-store';
import { createObjectOrder } from './object-order';
import { createDeliveryProcessor, type DeliveryOutcome } from './processor';

/**
 * How many times a job whose worker died (its lock expired) is taken up again; one stall more and
 * BullMQ fails it ("job stalled more than allowable limit"). A callback has no side effect on
 * Herald's side that a re-run would repeat (the merchant deduplicates on webhook-id), so the limit
 * is only a guard against a job that kills its worker every time. See docs/delivery.md.
 */
const MAX_STALLED_COUNT = 3;

/**
 * Margin of a gate slot's lease over the longest an attempt can take (two POSTs, after a 401, and a
 * token request): the load before and the time the worker's own event loop may lag. Only a job
 * whose worker died keeps its slot (or the breaker's probe turn) until the lease runs out.
 */
const GATE_LEASE_MARGIN_MS = 30_000;

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
  /** Makes the spans of each job, in the trace the job carries (see the processor); none when undefined, tracing off. */
  tracer?: Tracer | undefined;
}

/**
 * The BullMQ worker of the deliveries queue, whose `close()` also gives the target gate back the
 * slots this worker leased (otherwise they would stay counted until their lease ran out), and
 * closes the queue handle it wakes parked jobs through.
 */
export class DeliveryWorker extends Worker<DeliveryJobData, DeliveryOutcome, string> {
  #gate: WorkerGate | undefined;
  #wakeQueue: DeliveryQueue | undefined;

  /** The gate whose leases `close()` gives back, and the queue handle it closes (set once, right after construction). */
  useGate(gate: WorkerGate, wakeQueue: DeliveryQueue): void {
    this.#gate = gate;
    this.#wakeQueue = wakeQueue;
  }

  override async close(force = false): Promise<void> {
    await super.close(force);
    await this.#gate?.close();
    await this.#wakeQueue?.close();
  }
}

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
  const outbound = createOutboundClient({ guard, tracer: deps.tracer });
  const tokenOutbound = createOutboundClient({ guard, transport: 'axios', tracer: deps.tracer });
  const gate = targetGateOf(deps);
  // Wakes the parked jobs of ordered targets, over the worker's connection (a wake-up waits for
  // Redis to come back rather than being lost: the job it wakes finished its attempt).
  const wakeQueue = createDeliveryQueue(deps.connection, config.queuePrefix);
  // Jobs of this worker in the processor now: a job's statements wait for others' only when there are others.
  let running = 0;
  const processor = createDeliveryProcessor({
    deliveries: batchedDeliveryStore(pool, config, () => running > 1),
    authFor: (target, trace) => authStrategyFor(target, deps, trace === undefined ? tokenOutbound : inTrace(tokenOutbound, trace)),
    send: createCallbackSender({ timeoutMs: config.callback.timeoutMs, responseMaxBytes: config.callback.responseMaxBytes, outbound }),
    gate,
    order: createObjectOrder({
      repository: objectOrderRepository(pool),
      wake: (ids) => wakeParkedJobs(wakeQueue, ids),
      maxBatch: config.worker.concurrency,
    }),
    logger,
    metrics: deps.metrics,
    autoDisableAfterMs: config.targetAutoDisableAfterMs,
    policyDefaults: {
      attempts: config.retry.attempts,
      maxBackoffMs: config.retry.backoffMaxMs,
      timeoutMs: config.callback.timeoutMs,
      maxInFlight: config.targetGate.maxInFlight,
    },
    pauseMaxMs: config.retry.retryAfterMaxMs,
    tracer: deps.tracer,
  });
  const worker = new DeliveryWorker(
    DELIVERIES_QUEUE,
    async (job, token) => {
      running += 1;
      try {
        return await processor(job, token);
      } finally {
        running -= 1;
      }
    },
    {
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
    },
  );
  worker.useGate(gate, wakeQueue);
  worker.on('error', (error) => logger.warn('delivery worker error', { error: error.message }));
  return worker;
}

/**
 * The target gate (packages/queue) over the worker's Redis connection, this worker's leases of
 * targets' slots named after its process; its script runs carry a release and an admission for
 * each job the worker runs at once.
 */
function targetGateOf({ config, connection, logger }: DeliveryWorkerDependencies): WorkerGate {
  return createWorkerGate(connection, {
    queuePrefix: config.queuePrefix,
    // A target's policy may set a longer callback time limit than CALLBACK_TIMEOUT_MS: the lease outlasts the longest allowed.
    settings: {
      ...config.targetGate,
      leaseMs: 2 * Math.max(config.callback.timeoutMs, MAX_POLICY_TIMEOUT_MS) + config.callback.tokenTimeoutMs + GATE_LEASE_MARGIN_MS,
    },
    logger,
    maxBatch: 2 * config.worker.concurrency,
  });
}

/** The client whose requests (a target's token requests, sent by its auth strategy) are spans of `trace`. */
function inTrace(outbound: OutboundClient, trace: TraceContext): OutboundClient {
  return { send: (request) => outbound.send({ ...request, parent: trace }) };
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
      defaultTokenLifetimeSeconds: deps.config.callback.tokenDefaultLifetimeSeconds,
      onTokenRequest: (outcome) => deps.metrics.oauthTokenRequested(outcome),
      outbound,
    },
  );
}
