import { targetOwnerKey, type ApiKeyScope, type RecoveryRecord, type RecoveryRepository } from '@herald/db';
import { compileValidator, toDate, ValidationError } from '@herald/domain';
import type { RecoveryRequest, RecoveryResult } from '@herald/outbox';
import { ownTargetOf } from '../auth/merchant-key';
import { parseBody } from '../http/validate-body';
import { recoverBodySchema, type RecoverBody } from './schemas';

const validateBody = compileValidator<RecoverBody>(recoverBodySchema);
const DAY_MS = 86_400_000;

/** A recovery as the merchant sees it: its window, how far it got, and how its callbacks are going. */
export interface RecoveryView {
  id: string;
  /** running while a callback it queued is pending; finished once every one succeeded or failed for good. */
  status: 'running' | 'finished';
  from: string;
  to: string;
  /** Every event created before this was taken; `to` unless the window held more than one recovery queues. */
  coveredTo: string;
  complete: boolean;
  createdAt: string;
  finishedAt: string | null;
  queued: number;
  /** Of those, callbacks of events never sent to the target (it was off, or did not take them then). */
  neverSent: number;
  pending: number;
  sent: number;
  delivered: number;
  failed: number;
}

export interface RecoveriesDependencies {
  /** The outbox's recovery (@herald/outbox createRecovery). */
  recover: (request: RecoveryRequest) => Promise<RecoveryResult>;
  store: Pick<RecoveryRepository, 'find' | 'finish'>;
  /** RECOVERY_MAX_DAYS and RECOVERY_MAX_DELIVERIES. */
  maxDays: number;
  maxDeliveries: number;
  /** The clock (tests pass their own). Default `() => new Date()`. */
  now?: () => Date;
}

/**
 * The merchant's recovery, for every front end (the merchant API's routes, the portal): plain
 * functions of the key's scope, which decides the target (a merchant key its merchant's, a program
 * key its program's own), and of the request as given, which they validate. They throw
 * ValidationError (a bad window, named by its field), NoTargetError, TargetSwitchedOffError and
 * RecoveryRunningError; the HTTP layer maps them.
 */
export interface Recoveries {
  /** Starts a recovery of `input` ({from, to?}, as a body gives it) and returns it as it starts. */
  recover(scope: ApiKeyScope, input: unknown): Promise<RecoveryView>;
  /** One of the scope's recoveries; null when it has no such recovery (another tenant's included). */
  find(scope: ApiKeyScope, id: string): Promise<RecoveryView | null>;
}

export function createRecoveries(deps: RecoveriesDependencies): Recoveries {
  const now = deps.now ?? (() => new Date());
  return {
    async recover(scope, input) {
      const at = now();
      const earliest = new Date(at.getTime() - deps.maxDays * DAY_MS);
      const window = windowOf(parseBody(validateBody, input ?? {}), at, earliest, deps.maxDays);
      const owner = ownTargetOf(scope);
      const ownerKey = targetOwnerKey(owner);
      const { id } = await deps.recover({ ownerKey, owner: owner.kind, window: { ...window, storedSince: earliest }, maxDeliveries: deps.maxDeliveries });
      return recoveryView((await deps.store.find(id, ownerKey))!);
    },
    async find(scope, id) {
      const found = await deps.store.find(id, targetOwnerKey(ownTargetOf(scope)));
      if (!found) return null;
      // Over: its counts are stored now, so they stay when its deliveries' week is dropped.
      await deps.store.finish(found);
      return recoveryView(found);
    },
  };
}

/** The window asked for, checked against the clock: throws ValidationError naming the field to change. */
function windowOf(body: RecoverBody, now: Date, earliest: Date, maxDays: number): { from: Date; to: Date } {
  const from = toDate(body.from);
  const to = body.to === undefined ? now : toDate(body.to);
  const refuse = (pointer: string, message: string): never => {
    throw new ValidationError([{ pointer, message, keyword: 'window' }]);
  };
  if (from < earliest) {
    refuse('/from', `must be at most ${maxDays} days ago (RECOVERY_MAX_DAYS), so ${earliest.toISOString()} or later; recover older events through support`);
  }
  if (to <= from)
    refuse(
      body.to === undefined ? '/from' : '/to',
      body.to === undefined ? 'must be in the past when to is not given (to defaults to now)' : 'must be after from',
    );
  return { from, to };
}

function recoveryView(record: RecoveryRecord): RecoveryView {
  return {
    id: record.id,
    status: record.finishedAt === null ? 'running' : 'finished',
    from: record.from.toISOString(),
    to: record.to.toISOString(),
    coveredTo: record.coveredTo.toISOString(),
    complete: record.coveredTo.getTime() >= record.to.getTime(),
    createdAt: record.createdAt.toISOString(),
    finishedAt: record.finishedAt?.toISOString() ?? null,
    queued: record.queued,
    neverSent: record.created,
    pending: record.pending,
    sent: record.sent,
    delivered: record.delivered,
    failed: record.failed,
  };
}
