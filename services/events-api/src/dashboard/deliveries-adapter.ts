import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import type { Job } from 'bullmq';
import type { DeliveryQueue } from '@herald/queue';

// BullMQ keeps a delayed job's run time as its score in the delayed set: milliseconds shifted left
// by 12 bits, the low bits a counter that orders jobs due in the same millisecond.
const SCORE_COUNTER_BITS = 2 ** 12;

/**
 * The deliveries queue as bull-board reads it, with the true next run time of delayed jobs.
 *
 * bull-board shows a delayed job's run time as `timestamp + opts.delay`, and "Delay changed; the
 * new run time is currently unknown" whenever `delay` differs from `opts.delay`. A delivery's job
 * is added without a delay; each retry's backoff sets `delay` alone and counts from the failed
 * attempt, not from `timestamp` (when the job was added). So every retrying delivery read as
 * unknown. Here each delayed job's run time is read from the delayed set, and the job shows it as
 * a delay counted from `timestamp`, in both fields, which is what the page computes with.
 */
export class DeliveriesBoardAdapter extends BullMQAdapter {
  constructor(
    private readonly deliveries: DeliveryQueue,
    options: ConstructorParameters<typeof BullMQAdapter>[1],
    /** Of these delivery ids, those waiting for an earlier delivery of their object, with that one's id (the database knows). */
    private readonly waitingFor: (deliveryIds: readonly string[]) => Promise<ReadonlyMap<string, string>>,
  ) {
    super(deliveries, options);
  }

  override async getJobs(...args: Parameters<BullMQAdapter['getJobs']>): Promise<Job[]> {
    const jobs = await super.getJobs(...args);
    return args[0].includes('delayed') ? this.withRunTimes(jobs) : jobs;
  }

  override async getJob(id: string): Promise<Job | undefined> {
    const job = await super.getJob(id);
    return job ? (await this.withRunTimes([job]))[0] : undefined;
  }

  private async withRunTimes(jobs: Job[]): Promise<Job[]> {
    if (jobs.length === 0) return jobs;
    const client = await this.deliveries.getBackend().client;
    const [scores, waiting] = await Promise.all([
      Promise.all(jobs.map((job) => client.zscore(this.deliveries.keys.delayed!, job.id!))),
      // A job of an ordered target parked behind the previous callback of its object: its name says
      // which one (the wake-up, not the run time shown, is what it waits for). Unknown if the read fails.
      this.waitingFor(jobs.filter((job) => job.id !== undefined).map((job) => job.id!)).catch(() => new Map<string, string>()),
    ]);
    jobs.forEach((job, i) => {
      const score = scores[i];
      // Not in the delayed set: waiting, active or finished, whose page shows no run time.
      if (score === null || score === undefined) return;
      const predecessor = waiting.get(job.id!);
      if (predecessor !== undefined) job.name = `${job.name} (waiting for the previous callback of its object: delivery ${predecessor})`;
      const runAt = Math.floor(Number(score) / SCORE_COUNTER_BITS);
      const delay = Math.max(0, runAt - job.timestamp);
      job.delay = delay;
      job.opts = { ...job.opts, delay };
    });
    return jobs;
  }
}
