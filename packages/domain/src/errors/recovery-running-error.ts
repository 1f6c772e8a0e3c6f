import { HeraldError } from './herald-error';

/** A recovery of the same notification target is still running (one of its deliveries is pending): one at a time per target. */
export class RecoveryRunningError extends HeraldError {
  readonly code = 'recovery_running';

  constructor(readonly recoveryId: string) {
    super(
      `Recovery ${recoveryId} of this notification target is still running: a target has one recovery at a time, until every callback it queued has succeeded or failed for good. Follow it at GET /deliveries/recoveries/${recoveryId}, and recover again once it has finished.`,
    );
  }
}
