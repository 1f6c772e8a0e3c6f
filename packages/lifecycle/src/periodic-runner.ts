/** What one pass of a periodic task reports. */
export interface PassResult {
  /** The pass did a full batch: more work is likely waiting, so the next pass runs at once. */
  full: boolean;
}

export interface PeriodicRunnerOptions {
  /** Names the task in log lines. */
  name: string;
  /** Pause after a pass that was not full, and after a failed one. */
  intervalMs: number;
  /** Wait before the first pass. Default 0. */
  firstPassAfterMs?: number;
  /** Where a failed pass is reported (a @herald/logging Logger, or a plain object in tests). */
  logger: { warn(message: string, meta?: Record<string, unknown>): void };
}

export interface PeriodicRunner {
  /** Passes that threw since the start (each was logged; the next pass came at the interval). */
  readonly failedPasses: number;
  /** Stops scheduling passes and waits for the pass in flight, if any. */
  stop(): Promise<void>;
}

/**
 * The one runner of a process's periodic work (the outbox's sweeper, reconciler and queue-loss
 * watch, the delivery-worker's partition maintenance and retention): runs `pass` every
 * `intervalMs`, one pass at a time, until stopped. A full pass is followed at
 * once by the next, so a backlog drains without waiting an interval per batch. A pass that throws
 * is logged and counted, never thrown: a periodic task outlives a database or Redis outage.
 */
export function startPeriodicRunner(pass: () => Promise<PassResult>, options: PeriodicRunnerOptions): PeriodicRunner {
  let stopped = false;
  let failedPasses = 0;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const schedule = (delayMs: number): void => {
    if (stopped) return;
    timer = setTimeout(() => (running = runPass()), delayMs);
  };

  const runPass = async (): Promise<void> => {
    let delayMs = options.intervalMs;
    try {
      if ((await pass()).full) delayMs = 0;
    } catch (error) {
      failedPasses += 1;
      options.logger.warn(`${options.name} failed; trying again next interval`, { error: error instanceof Error ? error.message : String(error) });
    }
    schedule(delayMs);
  };

  schedule(options.firstPassAfterMs ?? 0);
  return {
    get failedPasses() {
      return failedPasses;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
