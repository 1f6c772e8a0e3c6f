import type { WorkerConfig } from '@herald/config';
import { credentialsCipherFromConfig, deliveryAttemptRepository, storedRange, type AttemptRecord, type DatabasePool, type DeferralRecord } from '@herald/db';
import { storedAtOf, type DeliveryRef } from '@herald/domain';
import { createCoalescer } from '@herald/queue';
import type { DeliveryStore } from './processor';

/**
 * Statements of each kind (load, record) one worker runs at once. Jobs that need one while both
 * run wait for the next, which carries all of them: the batches grow with the load by themselves.
 */
const STATEMENTS_IN_FLIGHT = 2;

/**
 * How long a job's record waits for those of the worker's other running jobs, to share one
 * statement and one commit with them. Only while other jobs run: a lone job's record never waits.
 * The load does not wait: it stands between the job and its POST, and there a wait of 1 ms cost
 * more callbacks per second than the statements it saved (docs/benchmarks.md).
 */
const RECORD_LINGER_MS = 1;

/**
 * The processor's reads and writes, gathered across the jobs this worker runs at once: one
 * statement loads the deliveries, targets and events of many jobs, one records their attempts.
 * A load joins the loads of the same tick, or of the time the statements in flight take; a record
 * also waits up to RECORD_LINGER_MS for others to join its statement while `otherJobsRunning()`.
 */
export function batchedDeliveryStore(pool: DatabasePool, config: WorkerConfig, otherJobsRunning: () => boolean): DeliveryStore {
  const repository = deliveryAttemptRepository(pool, credentialsCipherFromConfig(config));
  const options = { maxBatch: config.worker.concurrency, maxInFlight: STATEMENTS_IN_FLIGHT };
  const load = createCoalescer(async (jobs: DeliveryRef[]) => {
    const ids = jobs.map((job) => job.deliveryId);
    const found = await repository.loadForAttempts(ids, storedRange(jobs.map(storedAtOf)));
    return ids.map((id) => found.get(id) ?? null);
  }, options);
  const record = createCoalescer((records: AttemptRecord[]) => repository.recordAttempts(records), {
    ...options,
    lingerMs: () => (otherJobsRunning() ? RECORD_LINGER_MS : 0),
  });
  // One statement in flight at a time: deferrals are history, never worth a second connection.
  const recordDeferral = createCoalescer(
    async (records: DeferralRecord[]) => {
      await repository.recordDeferrals(records);
      return records.map(() => undefined);
    },
    { maxBatch: 10 * config.worker.concurrency, maxInFlight: 1 },
  );
  return {
    load,
    recordDeferral: (job, reason) => recordDeferral({ deliveryId: job.deliveryId, reason, at: new Date(), storedAt: storedAtOf(job) }),
    async record(attempt) {
      const recorded = await record(attempt);
      if (recorded === undefined) throw new Error(`Delivery ${attempt.deliveryId} does not exist.`);
      return recorded;
    },
  };
}
