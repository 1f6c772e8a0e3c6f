export interface CoalescerOptions {
  /** Most calls one batch carries. */
  maxBatch: number;
  /** Batches running at once; calls made while all of them run wait and go together in the next. */
  maxInFlight: number;
}

/**
 * Turns a batch operation into a one-item call, gathering the calls made while earlier batches
 * run (group commit). A call made when a slot is free runs at the end of the current tick, with
 * the calls of that tick; under load, the jobs a worker runs at once share one statement (and one
 * commit) instead of sending one each. `run` answers each input in order. When it throws, every
 * call of its batch rejects with the error.
 */
export function createCoalescer<I, O>(run: (inputs: I[]) => Promise<O[]>, options: CoalescerOptions): (input: I) => Promise<O> {
  if (!(options.maxBatch >= 1 && options.maxInFlight >= 1)) throw new RangeError('maxBatch and maxInFlight must be at least 1');
  const waiting: Array<{ input: I; resolve: (output: O) => void; reject: (error: unknown) => void }> = [];
  let inFlight = 0;
  let scheduled = false;

  const pump = (): void => {
    scheduled = false;
    while (inFlight < options.maxInFlight && waiting.length > 0) {
      const batch = waiting.splice(0, options.maxBatch);
      inFlight += 1;
      // run() is called inside the promise chain, so a synchronous throw rejects the batch too.
      Promise.resolve()
        .then(() => run(batch.map((call) => call.input)))
        .then(
          (outputs) => batch.forEach((call, i) => call.resolve(outputs[i] as O)),
          (error: unknown) => batch.forEach((call) => call.reject(error)),
        )
        .finally(() => {
          inFlight -= 1;
          pump();
        });
    }
  };

  return (input) =>
    new Promise<O>((resolve, reject) => {
      waiting.push({ input, resolve, reject });
      if (!scheduled && inFlight < options.maxInFlight) {
        scheduled = true;
        // Calls made in the same tick (jobs started together) join this batch.
        setImmediate(pump);
      }
    });
}
