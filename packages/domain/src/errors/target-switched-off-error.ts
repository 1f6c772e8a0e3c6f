import { HeraldError } from './herald-error';

/**
 * The notification target is switched off, so nothing can be sent to it: switching it on is the
 * platform's support's call (or the merchant's administrator's), never the merchant API's.
 */
export class TargetSwitchedOffError extends HeraldError {
  readonly code = 'target_switched_off';

  /** `auto-disabled` (by Herald, after failing for too long) or `switched-off` (by support or an administrator), as TargetOutlook says it. */
  constructor(readonly disabledReason: string) {
    const why = disabledReason === 'auto-disabled' ? ' by Herald, after every callback failed for too long (auto-disabled)' : '';
    super(
      `The notification target is switched off${why}, so nothing can be recovered to it. Fix the endpoint if needed and ask the platform's support to switch the target on; then recover: the events produced while it was off are recovered too.`,
    );
  }
}
