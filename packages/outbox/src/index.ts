/**
 * The delivery outbox between PostgreSQL and the queue, for both services. A delivery row is the
 * record of what must be delivered; its job in the queue is only the means. The ingest stores
 * deliveries marked enqueued and publishes their jobs after the commit (`createOutboxPublisher`);
 * a replay publishes jobs for deliveries it set back to pending; the delivery-worker's sweeper
 * enqueues deliveries left unmarked, and its reconciler requeues marked ones whose job the queue
 * lost. The SQL lives in @herald/db (`deliveryRepository`), the queue in @herald/queue.
 */
export { createOutboxPublisher, type OutboxPublisher, type OutboxPublisherDependencies } from './publish';
export { startSweeper, type Sweeper, type SweeperDependencies, type SweeperOptions } from './sweeper';
export { startReconciler, type Reconciler, type ReconcilerDependencies, type ReconcilerOptions } from './reconciler';
export type { OutboxLogger } from './outbox-logger';
export { startPeriodicRunner, type PassResult, type PeriodicRunner, type PeriodicRunnerOptions } from './periodic-runner';
