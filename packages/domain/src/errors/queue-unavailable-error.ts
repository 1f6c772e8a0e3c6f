import { HeraldError } from './herald-error';

/** The delivery queue (Redis) did not answer, and the operation changed nothing: retry later. */
export class QueueUnavailableError extends HeraldError {
  readonly code = 'queue_unavailable';

  constructor(what: string, options?: ErrorOptions) {
    super(`The delivery queue is unavailable; ${what}. Retry later.`, options);
  }
}
