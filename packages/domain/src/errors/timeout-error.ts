import { HeraldError } from './herald-error';

/** Work did not finish within its time bound (see `withTimeout`); the message says which work. */
export class TimeoutError extends HeraldError {
  override readonly name = 'TimeoutError';
  readonly code = 'timed_out';
}
