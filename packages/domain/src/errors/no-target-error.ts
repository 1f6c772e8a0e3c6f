import { HeraldError } from './herald-error';

/** The caller has no notification target (never set up, or removed): nothing can be sent. */
export class NoTargetError extends HeraldError {
  readonly code = 'not_found';

  constructor(owner: 'merchant' | 'program') {
    super(`No notification target is set for this ${owner}: the platform's support sets one up.`);
  }
}
