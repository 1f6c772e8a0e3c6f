// Auto-disable, the last step of a target that keeps failing: real PostgreSQL, Redis, HTTP
// receivers and delivery workers. A run of failures days long is made by setting the target's
// failing_since in the past rather than by waiting.
import { always, inTurn } from '@herald/testing';
import { useHttpRecorders, useWorlds, type World } from './support/world';

const world = useWorlds();
const receiver = useHttpRecorders();

const HOUR = 3_600_000;

/** The target's row as the worker left it. */
function targetRow(w: World, targetId: string) {
  return w.prisma.notificationTarget.findUniqueOrThrow({ where: { id: targetId } });
}

/** Makes the target look as if every attempt to it had failed since `msAgo`. */
async function failingFor(w: World, targetId: string, msAgo: number): Promise<Date> {
  const since = new Date(Date.now() - msAgo);
  await w.prisma.notificationTarget.update({ where: { id: targetId }, data: { failingSince: since } });
  return since;
}

describe('target auto-disable (TARGET_AUTO_DISABLE_AFTER)', () => {
  it('switches off a target whose every attempt has failed for longer than the threshold at its next failed attempt', async () => {
    // One job at a time: the second delivery, pending while the first switches the target off, is tried after it.
    const w = world({ DELIVERY_ATTEMPTS: '5', TARGET_AUTO_DISABLE_AFTER: '1h', WORKER_CONCURRENCY: '1' });
    const merchant = await receiver(always({ status: 503 }));
    const { programId, targetId } = await w.createTarget(`${merchant.origin}/hook`);
    const since = await failingFor(w, targetId, 2 * HOUR);
    const [sent, next] = await w.sendEvents(programId, 2);
    w.startWorker();

    // No retry: the attempt that switched the target off fails its delivery for good.
    const [delivery] = await w.settled([sent!.deliveryId]);
    expect(delivery).toMatchObject({ status: 'failed', attemptsMade: 1 });
    expect(delivery!.lastError).toBe(
      `the target answered HTTP 503; only 200 counts as delivered; every attempt since ${since.toISOString()} failed, so the notification target is auto-disabled`,
    );
    const target = await targetRow(w, targetId);
    expect(target).toMatchObject({ enabled: false, disabledReason: 'auto-disabled', failingSince: since, lastSuccessAt: null });
    expect(target.disabledAt).toBeInstanceOf(Date);
    // What the dashboard shows as the job's error.
    const job = await w.finishedJob(sent!.deliveryId);
    expect(job.failedReason).toMatch(/the notification target is auto-disabled$/);

    // One warning line and one count, not one per delivery.
    expect(w.logs().match(/notification target auto-disabled/g)).toHaveLength(1);
    expect(w.logs()).toContain(targetId);
    expect(await w.metrics.exposition()).toMatch(/^herald_targets_auto_disabled_total\{service="delivery-worker"\} 1$/m);

    // The target's pending deliveries fail at once as target_unavailable, saying why, without a POST.
    expect((await w.settled([next!.deliveryId]))[0]).toMatchObject({ status: 'failed' });
    const [attempt] = await w.attempts(next!.deliveryId);
    expect(attempt).toMatchObject({ errorKind: 'target_unavailable' });
    expect(attempt!.errorMessage).toMatch(/auto-disabled/);
    expect(merchant.requests).toHaveLength(1);
  });

  it('counts a run of failures shorter than the threshold as failing, without switching the target off', async () => {
    const w = world({ DELIVERY_ATTEMPTS: '1', TARGET_AUTO_DISABLE_AFTER: '1h' });
    const merchant = await receiver(always({ status: 500 }));
    const { programId, targetId } = await w.createTarget(`${merchant.origin}/hook`);
    w.startWorker();
    const [first] = await w.sendEvents(programId);
    await w.settled([first!.deliveryId]);
    const afterFirst = await targetRow(w, targetId);
    expect(afterFirst).toMatchObject({ enabled: true, disabledReason: null, lastSuccessAt: null });
    expect(afterFirst.failingSince).toBeInstanceOf(Date);

    // A second failure keeps the start of the run.
    const [second] = await w.sendEvents(programId);
    await w.settled([second!.deliveryId]);
    expect((await targetRow(w, targetId)).failingSince).toEqual(afterFirst.failingSince);
  });

  it('ends the run of failures with a success, which is kept as lastSuccessAt', async () => {
    const w = world({ DELIVERY_ATTEMPTS: '3', TARGET_AUTO_DISABLE_AFTER: '1h' });
    const merchant = await receiver(inTurn({ status: 200 }));
    const { programId, targetId } = await w.createTarget(`${merchant.origin}/hook`);
    await failingFor(w, targetId, 30 * 60_000);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    expect((await w.settled([sent!.deliveryId]))[0]).toMatchObject({ status: 'succeeded' });
    const target = await targetRow(w, targetId);
    expect(target).toMatchObject({ enabled: true, failingSince: null, disabledReason: null });
    expect(target.lastSuccessAt).toBeInstanceOf(Date);
  });

  it('never switches a target off when TARGET_AUTO_DISABLE_AFTER is 0', async () => {
    const w = world({ DELIVERY_ATTEMPTS: '1', TARGET_AUTO_DISABLE_AFTER: '0' });
    const merchant = await receiver(always({ status: 500 }));
    const { programId, targetId } = await w.createTarget(`${merchant.origin}/hook`);
    const since = await failingFor(w, targetId, 365 * 24 * HOUR);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    expect((await w.settled([sent!.deliveryId]))[0]).toMatchObject({
      status: 'failed',
      lastError: 'the target answered HTTP 500; only 200 counts as delivered',
    });
    expect(await targetRow(w, targetId)).toMatchObject({ enabled: true, disabledReason: null, failingSince: since });
    expect(w.logs()).not.toContain('auto-disabled');
  });

  it('starts a target switched on again with no run of failures, and keeps the reason of one switched off by hand', async () => {
    const w = world({ DELIVERY_ATTEMPTS: '1', TARGET_AUTO_DISABLE_AFTER: '1h' });
    const merchant = await receiver(always({ status: 500 }));
    const { programId, targetId } = await w.createTarget(`${merchant.origin}/hook`);
    await failingFor(w, targetId, 2 * HOUR);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);
    await w.settled([sent!.deliveryId]);
    const owner = { kind: 'program', programId } as const;
    const input = { url: `${merchant.origin}/hook`, auth: { mode: 'none' }, notifications: {} } as const;

    // Switched off again by hand: still auto-disabled, since when it was.
    const disabled = await targetRow(w, targetId);
    const off = await w.targets().upsert(owner, { ...input, enabled: false });
    expect(off).toMatchObject({ enabled: false, disabledReason: 'auto-disabled', disabledAt: disabled.disabledAt });

    const on = await w.targets().upsert(owner, { ...input, enabled: true });
    expect(on).toMatchObject({ enabled: true, disabledReason: null, disabledAt: null, health: { failingSince: null, lastSuccessAt: null } });
  });
});
