import { randomUUID } from 'node:crypto';
import { storedRange, type RecoveryCandidate, type RecoveryRepository, type RecoveryTarget, type RecoveryTransaction, type RecoveryWindow } from '@herald/db';
import { NoTargetError, RecoveryRunningError, TargetSwitchedOffError, targetOutlook, targetsToNotify, type DeliveryRef } from '@herald/domain';
import type { DeliveryProducer } from '@herald/queue';
import type { OutboxLogger } from './outbox-logger';
import type { OutboxPublisher } from './publish';
import { resetLocked } from './replay';

/** Candidates read per statement while a recovery looks for what its target has not received. */
const CANDIDATE_PAGE = 500;
/**
 * Most candidates one recovery reads, as a multiple of its most deliveries: candidates the
 * target's filters refuse cost a read each, so a window full of them stops here rather than
 * holding its transaction for long.
 */
const CANDIDATES_PER_DELIVERY = 10;

/** What a recovery is asked for. */
export interface RecoveryRequest {
  /** Whose target (`program:<id>` or `merchant:<id>`, see targetOwnerKey of @herald/db). */
  ownerKey: string;
  /** Whose target, as an error names it. */
  owner: 'merchant' | 'program';
  window: RecoveryWindow;
  /** RECOVERY_MAX_DELIVERIES: most deliveries it queues; the window's rest waits for the next recovery. */
  maxDeliveries: number;
}

/** What a recovery did. */
export interface RecoveryResult {
  id: string;
  /** Deliveries queued: failed ones set back to pending, and new ones (`created`) for events never sent. */
  queued: number;
  created: number;
  /** The window's end, or where it stopped at maxDeliveries: every event before it was taken. */
  coveredTo: Date;
  /** Whether it reached the window's end. */
  complete: boolean;
}

export interface RecoveryDependencies {
  recoveries: Pick<RecoveryRepository, 'transaction'>;
  /** Removes the failed deliveries' finished jobs, so that new ones can take their job ids (the replay's step 1). */
  producer: Pick<DeliveryProducer, 'removeFinishedJobs'>;
  /** Adds the jobs once the deliveries are committed as pending. */
  publisher: Pick<OutboxPublisher, 'publishUnmarked'>;
  logger: Pick<OutboxLogger, 'warn'>;
}

/**
 * A merchant's recovery: sends its notification target, once more, every event of the window that
 * the target takes (the routing rule of the ingest, targetsToNotify, on the target as it is now)
 * and that it has no delivered callback for. A failed delivery goes again through the replay's
 * steps (resetLocked: its finished job removed, set back to pending); an event never sent (the
 * target was off, or did not take it then) gets its delivery now, in its event's week as if the
 * ingest had made it. Pending and succeeded deliveries are left alone, so nothing is sent twice to
 * a target that got it. All in one transaction holding the target's recovery lock (an advisory
 * lock, so the worker's writes of the target's health never wait), which is what makes recoveries
 * of one target one at a time; the jobs are added after the commit by the outbox,
 * so they go through the fair share, the in-flight limit and the breaker like any other, and the
 * sweeper adds those Redis refused.
 */
export function createRecovery(deps: RecoveryDependencies): (request: RecoveryRequest) => Promise<RecoveryResult> {
  return async (request) => {
    const now = new Date();
    const { result, refs } = await deps.recoveries.transaction(async (tx) => {
      const target = await tx.lockTarget(request.ownerKey);
      if (!target) throw new NoTargetError(request.owner);
      // Why it is off, as GET /notification-target says it (the outlook's reason; no auto-disable date is needed).
      if (!target.enabled) throw new TargetSwitchedOffError(targetOutlook({ ...target, failingSince: null }, 0, now).disabledReason!);
      for (const earlier of await tx.unfinished(target.id)) {
        if (earlier.finishedAt === null) throw new RecoveryRunningError(earlier.id);
        await tx.finish(earlier);
      }

      // A target never missed what Herald stored before it was set up: those events are not its own to recover.
      const storedSince = new Date(Math.max(request.window.storedSince.getTime(), target.createdAt.getTime()));
      const { chosen, coveredTo, complete } = await choose(tx, target, { ...request, window: { ...request.window, storedSince } });
      const failed = chosen.filter((c) => c.deliveryId !== null);
      const locked = await tx.lockFailed(
        failed.map((c) => c.deliveryId!),
        storedRange(failed.map((c) => c.ingestedAt)),
      );
      const stillQueued = await resetLocked(
        deps,
        tx,
        locked.map((d) => d.id),
        now,
        'recovery',
      );
      const created = await tx.insertDeliveries(
        target.id,
        chosen.filter((c) => c.deliveryId === null).map((c) => ({ id: randomUUID(), eventId: c.eventId, createdAt: c.ingestedAt })),
      );
      const id = randomUUID();
      const deliveries = [
        ...locked.map((d) => ({ deliveryId: d.id, deliveryCreatedAt: d.createdAt, attemptsBefore: d.attemptsMade, eventId: d.eventId })),
        ...created.map((d) => ({ deliveryId: d.id, deliveryCreatedAt: d.createdAt, attemptsBefore: 0, eventId: d.eventId })),
      ];
      await tx.record({
        id,
        targetId: target.id,
        ownerKey: request.ownerKey,
        from: request.window.from,
        to: request.window.to,
        coveredTo,
        created: created.length,
        deliveries,
      });
      const byEvent = new Map(chosen.map((c) => [c.eventId, c]));
      const refs = deliveries
        .filter((d) => !stillQueued.has(d.deliveryId))
        .map((d) => refOf(target, byEvent.get(d.eventId)!, d.deliveryId, d.deliveryCreatedAt));
      return { result: { id, queued: deliveries.length, created: created.length, coveredTo, complete }, refs };
    });
    // After the commit: the worker must find the deliveries pending. If Redis refuses, the
    // deliveries are left unmarked, and the sweeper adds their jobs shortly.
    await deps.publisher.publishUnmarked(refs);
    return result;
  };
}

/**
 * The candidates the target takes, oldest first, up to maxDeliveries, and how far through the
 * window that got: the routing rule decides, on each event as the ingest would have.
 */
async function choose(
  tx: Pick<RecoveryTransaction, 'candidates'>,
  target: RecoveryTarget,
  request: RecoveryRequest,
): Promise<{ chosen: RecoveryCandidate[]; coveredTo: Date; complete: boolean }> {
  const chosen: RecoveryCandidate[] = [];
  const mostRead = request.maxDeliveries * CANDIDATES_PER_DELIVERY;
  let read = 0;
  let after: RecoveryCandidate | null = null;
  for (;;) {
    const page = await tx.candidates(target, request.window, after && { createdAt: after.createdAt, eventId: after.eventId }, CANDIDATE_PAGE);
    for (const candidate of page) {
      if (targetsToNotify(candidate, [target]).length === 0) continue;
      // Every event before this one is taken care of; this one and those after wait for the next recovery.
      if (chosen.length === request.maxDeliveries) return { chosen, coveredTo: candidate.createdAt, complete: false };
      chosen.push(candidate);
    }
    read += page.length;
    if (page.length < CANDIDATE_PAGE) return { chosen, coveredTo: request.window.to, complete: true };
    after = page.at(-1)!;
    if (read >= mostRead) return { chosen, coveredTo: after.createdAt, complete: false };
  }
}

/** The queue's reference to a recovered delivery, for its job. */
function refOf(target: RecoveryTarget, event: RecoveryCandidate, deliveryId: string, storedAt: Date): DeliveryRef {
  return {
    deliveryId,
    eventId: event.eventId,
    targetId: target.id,
    programId: event.programId,
    merchantId: event.merchantId,
    targetOwner: target.merchantId === null ? 'program' : 'merchant',
    storedAt: storedAt.toISOString(),
  };
}
