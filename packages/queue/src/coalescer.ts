export interface CoalescerOptions {
  /** Most calls one batch carries. */
  maxBatch: number;
  /** Batches running at once; calls made while all of them run wait and go together in the next. */
  maxInFlight: number;
  /** How long a call made now lingers when it gives no `lingerMs` of its own (default: it does not linger). */
  lingerMs?: () => number;
}

/**
 * A one-item call of a batch operation. `lingerMs` (default 0, or the coalescer's `lingerMs()`) is
 * how long the call may wait for other calls to carry it: a call that lingers does not start a
 * batch itself unless no other call has started one within that time, or a full batch is waiting.
 */
export type CoalescedCall<I, O> = (input: I, lingerMs?: number) => Promise<O>;

/**
 * Turns a batch operation into a one-item call, gathering the calls made while earlier batches
 * run (group commit). A call that does not linger, made when a slot is free, runs at the end of
 * the current tick with the calls of that tick; under load, the jobs a worker runs at once share
 * one statement (and one commit) instead of sending one each. A lingering call rides on the next
 * batch that another call, a running batch's end or a full batch starts, or starts one itself
 * when its time is up. `run` answers each input in order. When it throws, every call of its batch
 * rejects with the error.
 */
export function createCoalescer<I, O>(run: (inputs: I[]) => Promise<O[]>, options: CoalescerOptions): CoalescedCall<I, O> {
  if (!(options.maxBatch >= 1 && options.maxInFlight >= 1)) throw new RangeError('maxBatch and maxInFlight must be at least 1');
  const waiting: Array<{ input: I; resolve: (output: O) => void; reject: (error: unknown) => void }> = [];
  let inFlight = 0;
  let scheduled = false;
  let lingering: NodeJS.Timeout | undefined;

  const pump = (): void => {
    scheduled = false;
    while (inFlight < options.maxInFlight && waiting.length > 0) {
      const batch = waiting.splice(0, options.maxBatch);
      inFlight += 1;
      // run() is called inside the promise chain, so a synchronous throw rejects the batch too.
      Promise.resolve()
        .then(() => run(batch.map((call) => call.input)))
        .then(
          (outputs) => {
            batch.forEach((call, i) => {
              call.resolve(outputs[i] as O);
            });
          },
          (error: unknown) => {
            for (const call of batch) call.reject(error);
          },
        )
        .finally(() => {
          inFlight -= 1;
          pump();
        });
    }
    if (waiting.length === 0 && lingering) {
      clearTimeout(lingering);
      lingering = undefined;
    }
  };

  const schedule = (): void => {
    if (scheduled || inFlight >= options.maxInFlight) return;
    scheduled = true;
    // Calls made in the same tick (jobs started together) join this batch.
    setImmediate(pump);
  };

  return (input, lingerMs = options.lingerMs?.() ?? 0) =>
    new Promise<O>((resolve, reject) => {
      waiting.push({ input, resolve, reject });
      if (lingerMs <= 0 || waiting.length >= options.maxBatch) schedule();
      else
        lingering ??= setTimeout(() => {
          lingering = undefined;
          schedule();
        }, lingerMs);
    });
}
