import type { OutboxLogger } from './outbox-logger';
import { startPeriodicRunner, type PassResult } from '@herald/lifecycle';

/** The schedule every outbox task shares: a batch per pass, a pause between passes. */
export interface OutboxTaskSchedule {
  /** Pause between passes; the first pass also waits this long. */
  readonly intervalMs: number;
  /** Most deliveries one pass handles. */
  readonly batchSize: number;
}

export interface OutboxTaskOptions<Result> {
  /** Names the task in log lines. */
  name: string;
  schedule: OutboxTaskSchedule;
  logger: Pick<OutboxLogger, 'warn'>;
  /** Logs what a periodic pass did and says whether it was full. Not called for a caller's own `runOnce`. */
  afterPass(result: Result): PassResult;
}

export interface OutboxTask<Result> {
  /** One pass now, beside the loop. Throws what the pass threw. */
  runOnce(): Promise<Result>;
  /** Stops the loop and waits for a pass in progress. */
  stop(): Promise<void>;
}

/**
 * Runs `pass` on the shared periodic runner and hands it out for callers to run once themselves.
 * The first periodic pass waits an interval like every later one, so a pass started with the
 * process never races a caller's own `runOnce` for the same rows.
 */
export function startOutboxTask<Result>(pass: () => Promise<Result>, options: OutboxTaskOptions<Result>): OutboxTask<Result> {
  const { name, schedule, logger } = options;
  const runner = startPeriodicRunner(async () => options.afterPass(await pass()), {
    name,
    intervalMs: schedule.intervalMs,
    firstPassAfterMs: schedule.intervalMs,
    logger,
  });
  return { runOnce: pass, stop: () => runner.stop() };
}
