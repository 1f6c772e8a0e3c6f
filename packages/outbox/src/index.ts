/**
 * The delivery outbox between PostgreSQL and the queue, for both services. A delivery row is the
 * record of what must be delivered; its job in the queue is only the means. The ingest stores
 * deliveries marked enqueued and publishes their jobs after the commit (`createOutboxPublisher`);
 * a replay (`createReplay`) sets deliveries back to pending and publishes their jobs; a merchant's
 * recovery (`createRecovery`) does the same with its target's failed deliveries and creates those of
 * events never sent to it; the delivery-worker's sweeper
 * enqueues deliveries left unmarked, and its reconciler requeues marked ones whose job the queue
 * lost. The policy (what is locked, when Redis is asked, what is marked) lives here; the statements
 * in @herald/db (`deliveryRepository`, `deliveryHistoryRepository`), the queue in @herald/queue.
 */
export { createOutboxPublisher, type OutboxPublisher, type OutboxPublisherDependencies } from './publish';
export { createReplay, type ReplayDependencies, type ReplayedDelivery, type ReplayedJob, type ReplayResult } from './replay';
export { createRecovery, type RecoveryDependencies, type RecoveryRequest, type RecoveryResult } from './recovery';
export { startSweeper, type Sweeper, type SweeperDependencies, type SweeperOptions } from './sweeper';
export { startReconciler, type ReconcileResult, type Reconciler, type ReconcilerDependencies, type ReconcilerOptions } from './reconciler';
export type { OutboxLogger } from './outbox-logger';
export { startQueueLossWatch, type QueueLossWatch, type QueueLossWatchDependencies } from './queue-loss-watch';
