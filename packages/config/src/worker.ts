/** The delivery-worker's settings: the shared ones, its BullMQ worker, callbacks, retries, sweeper, reconciler and monitoring port. */
import { readTracing, type TracingConfig } from './tracing';
import { ConfigError } from './config-error';
import { fraction, integer, raw, type Env } from './parsers';
import {
  readAuthFailures,
  readBackoffMaxMs,
  readCallback,
  readDeliveryJobs,
  readHost,
  readMetrics,
  readServiceConfig,
  readTargetAutoDisableAfterMs,
  readTargetMaxInFlight,
  type AuthFailuresConfig,
  type CallbackConfig,
  type DeliveryJobsConfig,
  type MetricsConfig,
  type ServiceConfig,
} from './shared';

export interface WorkerConfig extends ServiceConfig {
  /** How failed callbacks are retried (BullMQ attempts and exponential backoff) and how long jobs are kept. */
  readonly retry: RetryConfig;
  /** The outbox sweeper that enqueues deliveries whose enqueue after commit did not happen. */
  readonly sweeper: SweeperConfig;
  /** The reconciler that requeues pending deliveries whose job the queue lost. */
  readonly reconciler: ReconcilerConfig;
  /** The BullMQ worker of the process. */
  readonly worker: QueueWorkerConfig;
  /** One callback attempt: its time limits and how much of the merchant's answer is kept. */
  readonly callback: CallbackConfig;
  /** The worker's own monitoring listener (`/metrics`, `/healthz`, `/readyz`). */
  readonly metrics: WorkerMetricsConfig;
  /** How wrong METRICS_TOKEN tries from one client address are slowed down on that listener. */
  readonly authFailures: AuthFailuresConfig;
  /** TARGET_AUTO_DISABLE_AFTER (see readTargetAutoDisableAfterMs). */
  readonly targetAutoDisableAfterMs: number;
  /** The per-target in-flight limit and circuit breaker, shared by every worker process through Redis. */
  readonly targetGate: TargetGateConfig;
  /** Weekly partitions of deliveries and attempts, monthly ones of events: created ahead, dropped past retention. */
  readonly partitions: PartitionsConfig;
  /** OpenTelemetry tracing (OTEL_*); undefined when off, the default. */
  readonly tracing: TracingConfig | undefined;
}

export interface PartitionsConfig {
  /** PARTITION_MAINTENANCE_INTERVAL_MS: pause between partition maintenance passes (the first runs at start). Default 3600000 (1 hour). */
  readonly intervalMs: number;
  /**
   * DELIVERY_RETENTION_DAYS: deliveries and their attempts are kept at least this many days after
   * their creation, then dropped a whole week at a time (so at most 7 days longer), except weeks
   * that still hold a pending delivery; 0 keeps them for ever. Default 30.
   */
  readonly deliveryRetentionDays: number;
  /**
   * EVENT_RETENTION_DAYS: events are kept at least this many days after Herald stored them (not
   * after their createdAt, which producers set), then dropped a whole month at a time (so up to a
   * month longer) and taken out of GET /events' counts, except months holding an event with a
   * pending delivery; 0 keeps them for ever. Default 0.
   */
  readonly eventRetentionDays: number;
}

/**
 * How one merchant's endpoint is kept from taking every worker slot. A job over its target's
 * limit, or whose target's breaker is open, goes back to the queue's delayed set without a POST and
 * without spending an attempt.
 */
export interface TargetGateConfig {
  /**
   * TARGET_MAX_IN_FLIGHT: most callbacks of one target in flight at once, across every worker
   * process; 0 for no limit. Default 16: one default worker process's worth of slots, so a
   * single healthy target still uses a whole process (the delivery bench, 2 processes x 16 slots
   * over 2 targets, never reaches it), while a hanging one leaves the slots of every other process free.
   */
  readonly maxInFlight: number;
  readonly breaker: TargetBreakerConfig;
}

/** When a target's circuit breaker opens, and for how long. */
interface TargetBreakerConfig {
  /** TARGET_BREAKER_FAILURES: failures in a row (timeout, refused or reset connection, TLS) that open it; 0 turns this rule off. Default 5. */
  readonly failures: number;
  /** TARGET_BREAKER_RATIO: share of such failures over the window that opens it, 0 to 1; 0 turns this rule off. Default 0.7. */
  readonly ratio: number;
  /** TARGET_BREAKER_WINDOW_SECONDS: the ratio's sliding window, in ms. Default 300 s. */
  readonly windowMs: number;
  /** TARGET_BREAKER_MIN_REQUESTS: fewest requests in the window before the ratio counts. Default 10. */
  readonly minRequests: number;
  /** TARGET_BREAKER_OPEN_SECONDS: time open before one probe tests the target, in ms; doubles after each failed probe. Default 30 s. */
  readonly openMs: number;
  /** TARGET_BREAKER_OPEN_MAX_SECONDS: longest open time the doubling reaches, in ms. Default 300 s. */
  readonly openMaxMs: number;
}

/** Retry policy of callbacks: BullMQ's attempts with exponential backoff (delay x 2^(n-1)) and jitter. */
export interface RetryConfig extends DeliveryJobsConfig {
  /** DELIVERY_BACKOFF_MS: wait before the first retry; each next one doubles. Default 30000. */
  readonly backoffDelayMs: number;
  /** DELIVERY_BACKOFF_MAX_MS: longest wait between two tries, where the doubling stops. Default 21600000 (6 hours). */
  readonly backoffMaxMs: number;
  /** DELIVERY_BACKOFF_JITTER: share of each wait drawn at random, 0 to 1. Default 0.2. */
  readonly backoffJitter: number;
  /**
   * RETRY_AFTER_MAX_MS: longest wait a merchant's `Retry-After` (on 429 or 503) can impose before the
   * next try; a longer one is cut to this. Default 3600000 (1 hour).
   */
  readonly retryAfterMaxMs: number;
}

/** How each delivery-worker process runs its BullMQ worker. */
export interface QueueWorkerConfig {
  /**
   * WORKER_CONCURRENCY: callbacks one process sends at the same time. Default 128: a callback in
   * flight mostly waits on the merchant, and costs the process 30 to 50 KB of memory and no CPU
   * while it waits (bench/concurrency.ts), so slots are cheap; more of them keep callbacks flowing
   * while some merchants answer slowly. The database load does not grow with it: the worker
   * batches its statements (at most 2 loads and 2 records at once, whatever the concurrency).
   */
  readonly concurrency: number;
  /**
   * WORKER_LOCK_DURATION_MS: how long a job stays locked to its worker without a renewal (renewed
   * every half of it while the process lives). A process that dies leaves its jobs locked this long
   * before another worker can take them again. Default 10000.
   */
  readonly lockDurationMs: number;
  /**
   * WORKER_STALLED_INTERVAL_MS: how often a worker looks for jobs whose lock expired (their worker
   * died). A dead worker's jobs run again within about this plus WORKER_LOCK_DURATION_MS. Default 5000.
   */
  readonly stalledIntervalMs: number;
}

export interface SweeperConfig {
  /** SWEEPER_INTERVAL_MS: pause between sweeps. Default 5000. */
  readonly intervalMs: number;
  /** SWEEPER_GRACE_MS: deliveries younger than this are left to the events-api's own enqueue. Default 10000. */
  readonly graceMs: number;
  /** SWEEPER_BATCH_SIZE: most deliveries enqueued per sweep. Default 500. */
  readonly batchSize: number;
}

export interface ReconcilerConfig {
  /** RECONCILER_INTERVAL_MS: pause between passes. Default 60000. */
  readonly intervalMs: number;
  /**
   * RECONCILER_STALE_AFTER_MS: a pending delivery is checked once it was enqueued, and last found
   * alive in the queue, longer ago than this. Default 300000 (5 minutes).
   */
  readonly staleAfterMs: number;
  /** RECONCILER_BATCH_SIZE: most pending deliveries checked per pass. Default 500. */
  readonly batchSize: number;
  /**
   * RECONCILER_LOSS_CHECK_MS: how often each worker checks that Redis still holds the queue (a
   * marker key it keeps there). When the marker is gone (Redis restarted empty, flushed, or
   * evicting), the reconciler checks every pending delivery at once, however recently enqueued,
   * instead of waiting for RECONCILER_STALE_AFTER_MS. 100 to 60000. Default 1000.
   */
  readonly lossCheckMs: number;
}

export interface WorkerMetricsConfig extends MetricsConfig {
  /**
   * METRICS_PORT: port of each delivery-worker's own HTTP listener (`/metrics`, `/healthz`,
   * `/readyz`); 0 takes a free port, which the worker logs. Default 9464 (Prometheus's registered
   * port for Node.js exporters).
   */
  readonly port: number;
  /** HOST: the address of that listener, as the events-api's (loopback outside production). */
  readonly host: string | undefined;
  /**
   * Whether a taken METRICS_PORT moves on to the next free port instead of stopping the worker:
   * only under NODE_ENV=development with METRICS_PORT unset, so that `pnpm start:worker` beside
   * `pnpm start` starts with the defaults. A port that was asked for, or any port in production,
   * is kept or the worker stops saying so (a scraper looks for it there).
   */
  readonly movesOnWhenTaken: boolean;
}

/**
 * Reads and validates the delivery-worker's environment into a frozen object. The events-api's
 * secrets (ADMIN_TOKEN, INGEST_TOKEN, DASHBOARD_PASSWORD) are neither read nor required, in
 * production either. Pure: pass an env object in tests.
 */
export function loadWorkerConfig(env: Env = process.env): WorkerConfig {
  const service = readServiceConfig(env);
  return Object.freeze({
    ...service,
    retry: readRetry(env),
    sweeper: Object.freeze({
      intervalMs: integer(env, 'SWEEPER_INTERVAL_MS', 5_000, 100, 3_600_000),
      graceMs: integer(env, 'SWEEPER_GRACE_MS', 10_000, 0, 3_600_000),
      batchSize: integer(env, 'SWEEPER_BATCH_SIZE', 500, 1, 10_000),
    }),
    reconciler: Object.freeze({
      intervalMs: integer(env, 'RECONCILER_INTERVAL_MS', 60_000, 100, 3_600_000),
      staleAfterMs: integer(env, 'RECONCILER_STALE_AFTER_MS', 300_000, 0, 86_400_000),
      batchSize: integer(env, 'RECONCILER_BATCH_SIZE', 500, 1, 10_000),
      lossCheckMs: integer(env, 'RECONCILER_LOSS_CHECK_MS', 1_000, 100, 60_000),
    }),
    worker: Object.freeze({
      concurrency: integer(env, 'WORKER_CONCURRENCY', 128, 1, 1_000),
      lockDurationMs: integer(env, 'WORKER_LOCK_DURATION_MS', 10_000, 1_000, 3_600_000),
      stalledIntervalMs: integer(env, 'WORKER_STALLED_INTERVAL_MS', 5_000, 500, 3_600_000),
    }),
    callback: Object.freeze(readCallback(env)),
    metrics: Object.freeze({
      port: integer(env, 'METRICS_PORT', 9464, 0, 65535),
      host: readHost(env, service.nodeEnv),
      movesOnWhenTaken: service.nodeEnv === 'development' && raw(env, 'METRICS_PORT') === undefined,
      ...readMetrics(env),
    }),
    authFailures: Object.freeze(readAuthFailures(env)),
    targetAutoDisableAfterMs: readTargetAutoDisableAfterMs(env),
    targetGate: readTargetGate(env),
    tracing: readTracing(env, 'herald-delivery-worker'),
    partitions: Object.freeze({
      intervalMs: integer(env, 'PARTITION_MAINTENANCE_INTERVAL_MS', 3_600_000, 1_000, 86_400_000),
      deliveryRetentionDays: integer(env, 'DELIVERY_RETENTION_DAYS', 30, 0, 36_500),
      eventRetentionDays: integer(env, 'EVENT_RETENTION_DAYS', 0, 0, 36_500),
    }),
  });
}

/**
 * The retry policy: BullMQ's attempts (DELIVERY_ATTEMPTS), waits doubling from DELIVERY_BACKOFF_MS
 * up to DELIVERY_BACKOFF_MAX_MS. The defaults, 22 tries, 30 s doubling to 6 hours, span about three
 * days (docs/delivery.md lists the waits): a merchant's endpoint down over a weekend night still
 * gets its callbacks, as payment platforms retry for days, not hours.
 */
function readRetry(env: Env): RetryConfig {
  const backoffDelayMs = integer(env, 'DELIVERY_BACKOFF_MS', 30_000, 1, 86_400_000);
  const backoffMaxMs = readBackoffMaxMs(env);
  if (backoffMaxMs < backoffDelayMs) throw new ConfigError('DELIVERY_BACKOFF_MAX_MS', `must be at least DELIVERY_BACKOFF_MS (${backoffDelayMs})`);
  return Object.freeze({
    ...readDeliveryJobs(env),
    backoffDelayMs,
    backoffMaxMs,
    backoffJitter: fraction(env, 'DELIVERY_BACKOFF_JITTER', 0.2),
    retryAfterMaxMs: integer(env, 'RETRY_AFTER_MAX_MS', 3_600_000, 0, 86_400_000),
  });
}

function readTargetGate(env: Env): TargetGateConfig {
  const openMs = integer(env, 'TARGET_BREAKER_OPEN_SECONDS', 30, 1, 86_400) * 1000;
  const openMaxMs = integer(env, 'TARGET_BREAKER_OPEN_MAX_SECONDS', 300, 1, 86_400) * 1000;
  if (openMaxMs < openMs) throw new ConfigError('TARGET_BREAKER_OPEN_MAX_SECONDS', `must be at least TARGET_BREAKER_OPEN_SECONDS (${openMs / 1000})`);
  return Object.freeze({
    maxInFlight: readTargetMaxInFlight(env),
    breaker: Object.freeze({
      failures: integer(env, 'TARGET_BREAKER_FAILURES', 5, 0, 10_000),
      ratio: fraction(env, 'TARGET_BREAKER_RATIO', 0.7),
      windowMs: integer(env, 'TARGET_BREAKER_WINDOW_SECONDS', 300, 1, 86_400) * 1000,
      minRequests: integer(env, 'TARGET_BREAKER_MIN_REQUESTS', 10, 1, 1_000_000),
      openMs,
      openMaxMs,
    }),
  });
}
