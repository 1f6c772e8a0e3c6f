import type { Violation } from '../violation';
import { HeraldError } from './herald-error';

// A batch can break thousands of rules; the message names the first few, `violations` holds all.
const VIOLATIONS_IN_MESSAGE = 5;

/** Input broke one or more schema rules; `violations` names each offending field by JSON pointer. */
export class ValidationError extends HeraldError {
  override readonly name = 'ValidationError';
  readonly code = 'validation_failed';

  constructor(readonly violations: readonly Violation[]) {
    const shown = violations.slice(0, VIOLATIONS_IN_MESSAGE).map((v) => `${v.pointer || '/'} ${v.message}`);
    const more = violations.length - shown.length;
    super(`Validation failed: ${shown.join('; ')}${more > 0 ? `; and ${more} more` : ''}`);
  }
}
