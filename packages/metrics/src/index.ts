/**
 * Herald's Prometheus metrics, all defined here: one registry per process, with the default Node.js
 * process metrics, every series labelled with the `service` that wrote it. Callers use the typed
 * helpers of `HeraldMetrics` and never prom-client itself, so names, labels and buckets cannot drift
 * between the events-api and the delivery-worker.
 *
 * Labels hold bounded values only (outcomes, queue states, HTTP methods, route patterns, status
 * codes): never an id, a URL or anything a merchant sends.
 */
import { DEFERRAL_REASONS, type DeferralReason, withTimeout } from '@herald/domain';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** How one callback attempt ended: delivered; failed with a retry to come; failed for good (no retry left, or not retryable). */
export type DeliveryOutcomeLabel = 'delivered' | 'attempt_failed' | 'failed';

/** The BullMQ job states whose counts `herald_queue_jobs` reports. */
export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'completed', 'failed', 'prioritized'] as const;
export type QueueState = (typeof QUEUE_STATES)[number];

/** What the queue gauge reads: BullMQ's `Queue.getJobCounts`, typed structurally so this package needs no BullMQ. */
export interface JobCountsSource {
  getJobCounts(...states: QueueState[]): Promise<Record<string, number>>;
}

/** What the Bull dashboard did to the deliveries queue: the changes it allows, each logged and counted. */
export type DashboardQueueAction = 'pause' | 'resume' | 'retry' | 'promote' | 'remove' | 'clean' | 'purge_metrics';

/**
 * How one request to a merchant's token endpoint ended: a token `issued`, or how it failed (the
 * kinds of @herald/callback-auth's TokenRequestFailureKind; `unexpected`: an error of Herald's
 * own). The wiring passes callback-auth's outcome here, so the compiler refuses a kind missing.
 */
export const OAUTH_TOKEN_OUTCOMES = [
  'issued',
  'http_status',
  'redirect',
  'invalid_response',
  'timeout',
  'connection',
  'tls',
  'address_refused',
  'unexpected',
] as const;
export type OAuthTokenOutcome = (typeof OAUTH_TOKEN_OUTCOMES)[number];

/**
 * What became of deliveries whose jobs the events-api's outbox added after their transaction:
 * `enqueued`; or the enqueue failed and they were left to the sweeper (their mark cleared) or, with
 * PostgreSQL failing too, to the reconciler.
 */
export const ENQUEUE_OUTCOMES = ['enqueued', 'left_to_sweeper', 'left_to_reconciler'] as const;
export type EnqueueOutcome = (typeof ENQUEUE_OUTCOMES)[number];

/** Counts of targets whose circuit breaker is not closed, read at scrape time. */
export type BreakerCounts = { open: number; half_open: number };

/** The route label of a request that matched no route (404s, and answers given by middleware before any route). */
export const UNMATCHED_ROUTE = 'unmatched';

/** One finished HTTP request. */
export interface HttpRequestSample {
  method: string;
  /** The route pattern (`/admin/deliveries/:id`), never the raw URL; `UNMATCHED_ROUTE` when none matched. */
  route: string;
  status: number;
  durationSeconds: number;
}

export interface MetricsOptions {
  /** Value of the `service` label on every series, e.g. `events-api`. */
  service: string;
  /** Longest a scrape waits for the queue's job counts before it leaves `herald_queue_jobs` out, in ms. Default 1000. */
  queueCountsTimeoutMs?: number;
  /**
   * Whether this process kind exports the gauges of shared state (the queue's jobs, the breakers,
   * the partitions held back): true for the delivery-worker only. They are then declared from the
   * start, so a dashboard finds them before their first value. Default false: a registry declares
   * one at its first watch or report only, so the events-api exports none.
   */
  sharedState?: boolean;
}

export interface HeraldMetrics {
  /** Content-Type of `exposition()`: the Prometheus text format. */
  readonly contentType: string;
  /** Every series in the Prometheus text format; reads the queue's job counts first. */
  exposition(): Promise<string>;
  /** `herald_events_ingested_total`: events newly stored by the ingest endpoint (an idempotent repeat is not counted). */
  eventsIngested(count: number): void;
  /** `herald_deliveries_total{outcome}` and `herald_delivery_attempt_duration_seconds`: one callback attempt. */
  deliveryAttempt(outcome: DeliveryOutcomeLabel, durationSeconds: number): void;
  /** `herald_delivery_deferrals_total{reason}`: a job sent back to wait without a POST (not an attempt). */
  deliveryDeferred(reason: DeferralReason): void;
  /**
   * Reports `herald_target_breakers{state}` (open, half_open: how many targets, never which) from
   * this source at every scrape. Shared state: one process kind watches it (the delivery-worker),
   * and a registry that never does exports no such series.
   */
  watchBreakers(source: () => Promise<BreakerCounts>): void;
  /** `herald_oauth_token_requests_total{outcome}`: one HTTP request to a merchant's token endpoint, by how it ended. */
  oauthTokenRequested(outcome: OAuthTokenOutcome): void;
  /** `herald_delivery_enqueues_total{outcome}`: deliveries the outbox tried to enqueue after their transaction, by outcome. */
  deliveriesEnqueued(outcome: EnqueueOutcome, count: number): void;
  /** `herald_sweeper_enqueued_total`: deliveries the outbox sweeper put in the queue. */
  sweeperEnqueued(count: number): void;
  /** `herald_targets_auto_disabled_total`: targets switched off because every attempt failed for TARGET_AUTO_DISABLE_AFTER. */
  targetAutoDisabled(): void;
  /**
   * `herald_reconciler_checked_total` and `herald_reconciler_requeued_total`: pending deliveries
   * whose job the reconciler looked up, and those it gave a new job because theirs was lost.
   */
  reconciled(checked: number, requeued: number): void;
  /**
   * `herald_retention_dropped_partitions_total` and `herald_retention_dropped_rows_total{table}`:
   * one week of deliveries dropped past DELIVERY_RETENTION_DAYS, with the rows it held.
   */
  retentionDropped(rows: { deliveries: number; attempts: number }): void;
  /** `herald_retention_held_partitions`: weeks past retention kept, at the last pass, because they hold pending deliveries. */
  retentionHeld(weeks: number): void;
  /**
   * `herald_event_retention_dropped_partitions_total` and `herald_retention_dropped_rows_total{table="events"}`:
   * one month of events dropped past EVENT_RETENTION_DAYS, with the events it held.
   */
  eventRetentionDropped(rows: { events: number }): void;
  /** `herald_event_retention_held_partitions`: months of events past retention kept, at the last pass, because some of their events have pending deliveries. */
  eventRetentionHeld(months: number): void;
  /** `herald_http_request_duration_seconds{method,route,status}`. */
  httpRequest(sample: HttpRequestSample): void;
  /** `herald_dashboard_queue_actions_total{action}`: a change the Bull dashboard made to the deliveries queue. */
  dashboardQueueAction(action: DashboardQueueAction): void;
  /**
   * Reports `herald_queue_jobs{state}` from this queue at every scrape. One queue per registry.
   * Shared state: one process kind watches it (the delivery-worker), and a registry that never
   * does exports no such series.
   */
  watchQueue(queue: JobCountsSource): void;
}

const DEFAULT_QUEUE_COUNTS_TIMEOUT_MS = 1_000;
// A callback may take up to CALLBACK_TIMEOUT_MS (10 s by default), twice with an OAuth 401.
const ATTEMPT_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30];
const HTTP_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** A fresh registry with Herald's metrics. Call once per process (tests make one per app or worker). */
export function createMetrics(options: MetricsOptions): HeraldMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service: options.service });
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const queueCountsTimeoutMs = options.queueCountsTimeoutMs ?? DEFAULT_QUEUE_COUNTS_TIMEOUT_MS;

  const eventsIngested = new Counter({ name: 'herald_events_ingested_total', help: 'Events newly stored by the ingest endpoint.', registers });
  const deliveries = new Counter({
    name: 'herald_deliveries_total',
    help: 'Callback attempts by outcome: delivered, attempt_failed (a retry follows) or failed (no retry left).',
    labelNames: ['outcome'] as const,
    registers,
  });
  const attemptDuration = new Histogram({
    name: 'herald_delivery_attempt_duration_seconds',
    help: 'Duration of one callback attempt, token request and a second POST after a 401 included.',
    buckets: ATTEMPT_BUCKETS,
    registers,
  });
  const tokenRequests = new Counter({
    name: 'herald_oauth_token_requests_total',
    help: "HTTP requests to merchants' OAuth token endpoints, by outcome: issued, or how they failed.",
    labelNames: ['outcome'] as const,
    registers,
  });
  for (const outcome of OAUTH_TOKEN_OUTCOMES) tokenRequests.inc({ outcome }, 0);
  const enqueues = new Counter({
    name: 'herald_delivery_enqueues_total',
    help: "Deliveries the events-api's outbox enqueued after their transaction, by outcome: enqueued, left_to_sweeper or left_to_reconciler.",
    labelNames: ['outcome'] as const,
    registers,
  });
  for (const outcome of ENQUEUE_OUTCOMES) enqueues.inc({ outcome }, 0);
  const sweeperEnqueued = new Counter({ name: 'herald_sweeper_enqueued_total', help: 'Deliveries enqueued by the outbox sweeper.', registers });
  const targetsAutoDisabled = new Counter({
    name: 'herald_targets_auto_disabled_total',
    help: 'Notification targets switched off because every attempt failed for TARGET_AUTO_DISABLE_AFTER.',
    registers,
  });
  const reconcilerChecked = new Counter({
    name: 'herald_reconciler_checked_total',
    help: 'Pending deliveries whose job the reconciler looked up in the queue.',
    registers,
  });
  const reconcilerRequeued = new Counter({
    name: 'herald_reconciler_requeued_total',
    help: 'Pending deliveries the reconciler gave a new job because the queue had lost theirs.',
    registers,
  });
  const httpDuration = new Histogram({
    name: 'herald_http_request_duration_seconds',
    help: 'Duration of HTTP requests by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers,
  });
  const dashboardActions = new Counter({
    name: 'herald_dashboard_queue_actions_total',
    help: 'Changes the Bull dashboard made to the deliveries queue, by action: pause, resume, retry, promote, remove, clean, purge_metrics.',
    labelNames: ['action'] as const,
    registers,
  });
  for (const action of ['pause', 'resume', 'retry', 'promote', 'remove', 'clean', 'purge_metrics'] satisfies DashboardQueueAction[])
    dashboardActions.inc({ action }, 0);
  const deferrals = new Counter({
    name: 'herald_delivery_deferrals_total',
    help: 'Callback jobs sent back to wait without a POST, by reason: breaker_open, target_busy or awaiting_predecessor (an ordered target callback parked until the previous callback of its object has its final outcome). Not attempts.',
    labelNames: ['reason'] as const,
    registers,
  });
  // Every outcome starts at 0, so a rate over a fresh process is defined.
  for (const outcome of ['delivered', 'attempt_failed', 'failed'] satisfies DeliveryOutcomeLabel[]) deliveries.inc({ outcome }, 0);
  for (const reason of DEFERRAL_REASONS) deferrals.inc({ reason }, 0);

  const retentionPartitions = new Counter({
    name: 'herald_retention_dropped_partitions_total',
    help: 'Weekly partitions of deliveries (with their attempts) dropped past DELIVERY_RETENTION_DAYS.',
    registers,
  });
  const retentionRows = new Counter({
    name: 'herald_retention_dropped_rows_total',
    help: 'Rows dropped with partitions past their retention, by table.',
    labelNames: ['table'] as const,
    registers,
  });
  for (const table of ['deliveries', 'delivery_attempts', 'events']) retentionRows.inc({ table }, 0);
  // Gauges of shared state (the database's partitions, the queue, the breakers) are registered by
  // the first report or watch: only the process kind that reports them exports them, so summing
  // over a deployment's processes never counts one fact twice (docs/operations.md, Metrics).
  const retentionHeld = lazily(
    () =>
      new Gauge({
        name: 'herald_retention_held_partitions',
        help: 'Weekly partitions past DELIVERY_RETENTION_DAYS kept at the last maintenance pass because they hold pending deliveries.',
        registers,
      }),
  );
  const eventRetentionPartitions = new Counter({
    name: 'herald_event_retention_dropped_partitions_total',
    help: 'Monthly partitions of events dropped past EVENT_RETENTION_DAYS.',
    registers,
  });
  const eventRetentionHeld = lazily(
    () =>
      new Gauge({
        name: 'herald_event_retention_held_partitions',
        help: 'Monthly partitions of events past EVENT_RETENTION_DAYS kept at the last maintenance pass because some of their events have pending deliveries.',
        registers,
      }),
  );

  let breakers: (() => Promise<BreakerCounts>) | undefined;
  const breakersGauge = lazily(
    () =>
      new Gauge({
        name: 'herald_target_breakers',
        help: 'Notification targets whose circuit breaker is open or half_open, read from Redis at scrape time.',
        labelNames: ['state'] as const,
        registers,
        async collect() {
          if (!breakers) return;
          try {
            const counts = await withTimeout(breakers(), queueCountsTimeoutMs, 'breaker counts timed out');
            this.set({ state: 'open' }, counts.open);
            this.set({ state: 'half_open' }, counts.half_open);
          } catch {
            this.reset();
          }
        },
      }),
  );

  let queue: JobCountsSource | undefined;
  const queueGauge = lazily(
    () =>
      new Gauge({
        name: 'herald_queue_jobs',
        help: 'Jobs of the deliveries queue by state, read from Redis at scrape time.',
        labelNames: ['state'] as const,
        registers,
        async collect() {
          if (!queue) return;
          try {
            const counts = await withTimeout(queue.getJobCounts(...QUEUE_STATES), queueCountsTimeoutMs, 'queue job counts timed out');
            for (const state of QUEUE_STATES) this.set({ state }, counts[state] ?? 0);
          } catch {
            // Redis is down: report no value rather than a stale one (readiness says why).
            this.reset();
          }
        },
      }),
  );

  if (options.sharedState) for (const declare of [queueGauge, breakersGauge, retentionHeld, eventRetentionHeld]) declare();

  return {
    contentType: registry.contentType,
    exposition: () => registry.metrics(),
    eventsIngested: (count) => eventsIngested.inc(count),
    deliveryAttempt(outcome, durationSeconds) {
      deliveries.inc({ outcome });
      attemptDuration.observe(durationSeconds);
    },
    deliveryDeferred: (reason) => deferrals.inc({ reason }),
    watchBreakers(source) {
      breakers = source;
      breakersGauge();
    },
    oauthTokenRequested: (outcome) => tokenRequests.inc({ outcome }),
    deliveriesEnqueued: (outcome, count) => enqueues.inc({ outcome }, count),
    sweeperEnqueued: (count) => sweeperEnqueued.inc(count),
    targetAutoDisabled: () => targetsAutoDisabled.inc(),
    reconciled(checked, requeued) {
      reconcilerChecked.inc(checked);
      reconcilerRequeued.inc(requeued);
    },
    retentionDropped({ deliveries: deliveryRows, attempts }) {
      retentionPartitions.inc();
      retentionRows.inc({ table: 'deliveries' }, deliveryRows);
      retentionRows.inc({ table: 'delivery_attempts' }, attempts);
    },
    retentionHeld: (weeks) => retentionHeld().set(weeks),
    eventRetentionDropped({ events }) {
      eventRetentionPartitions.inc();
      retentionRows.inc({ table: 'events' }, events);
    },
    eventRetentionHeld: (months) => eventRetentionHeld().set(months),
    httpRequest: ({ method, route, status, durationSeconds }) => httpDuration.observe({ method, route, status: String(status) }, durationSeconds),
    dashboardQueueAction: (action) => dashboardActions.inc({ action }),
    watchQueue(source) {
      queue = source;
      queueGauge();
    },
  };
}

/** `create`'s value, made at the first call and kept. */
function lazily<T>(create: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= create();
    return value;
  };
}
