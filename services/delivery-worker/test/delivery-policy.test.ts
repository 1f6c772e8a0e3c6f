import type { DeliveryPolicy } from '@herald/domain';
import { createRedisConnection } from '@herald/queue';
import { always, waitFor } from '@herald/testing';
import { useHttpRecorders, useWorlds, type World } from './support/world';

const world = useWorlds();
const receiver = useHttpRecorders();

/** Sets the delivery policy of the program's target, as an admin's PATCH does. */
async function setPolicy(w: World, programId: string, delivery: DeliveryPolicy): Promise<void> {
  const changed = await w.targets().change({ kind: 'program', programId }, (current) => ({ ...current, delivery }));
  expect(changed?.delivery).toEqual(delivery);
}

/** When BullMQ will take the delayed job up again: its score in the delayed set is that time x 2^12 plus a counter. */
async function delayedUntil(w: World, jobId: string): Promise<number> {
  const redis = createRedisConnection(w.config.redisUrl, { role: 'worker' });
  const score = await redis.zscore(w.queue.toKey('delayed'), jobId).finally(() => redis.quit());
  if (score === null) throw new Error(`job ${jobId} is not delayed`);
  return Math.floor(Number(score) / 4096);
}

describe("a target's delivery policy, read by the worker at each attempt", () => {
  it("fails a delivery for good once the policy's attempts are spent, though the settings allow more", async () => {
    const w = world({ DELIVERY_ATTEMPTS: '5' });
    const merchant = await receiver(always({ status: 500 }));
    const { programId } = await w.createTarget(`${merchant.origin}/hook`);
    await setPolicy(w, programId, { attempts: 2 });
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    const [failed] = await w.settled([sent!.deliveryId]);
    expect(failed).toMatchObject({ status: 'failed', attemptsMade: 2, lastStatusCode: 500 });
    expect(merchant.requests).toHaveLength(2);
    const job = await w.finishedJob(sent!.deliveryId);
    expect(await job.getState()).toBe('failed');
    expect(job.attemptsMade).toBe(2);
    expect(job.stacktrace).toEqual([
      'CallbackAttemptError: the target answered HTTP 500; only 200 counts as delivered',
      'CallbackAttemptError: the target answered HTTP 500; only 200 counts as delivered',
    ]);
  });

  it('applies a policy changed while a job waits in its backoff to its next attempt: the attempts left and the longest wait', async () => {
    // Waits of 1 s, 2 s, 4 s … under the settings; the changed policy holds them at 1 s and stops at 3 attempts.
    const w = world({ DELIVERY_ATTEMPTS: '5', DELIVERY_BACKOFF_MS: '1000' });
    const merchant = await receiver(always({ status: 500 }));
    const { programId } = await w.createTarget(`${merchant.origin}/hook`);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);
    const jobId = sent!.deliveryId;

    // The first attempt failed and its job waits the settings' first wait.
    await waitFor(
      async () => (await w.queue.getJob(jobId))?.attemptsMade === 1 && (await w.queue.getJobState(jobId)) === 'delayed',
      (delayed) => delayed,
      10_000,
      'the job to wait after its first attempt',
    );
    await setPolicy(w, programId, { attempts: 3, maxBackoffMs: 1_000 });

    // The second attempt's wait is the new policy's longest, 1 s, not the settings' 2 s.
    await waitFor(
      async () => (await w.queue.getJob(jobId))?.attemptsMade === 2 && (await w.queue.getJobState(jobId)) === 'delayed',
      (delayed) => delayed,
      10_000,
      'the job to wait after its second attempt',
    );
    const [, second] = await w.attempts(jobId);
    const wait = (await delayedUntil(w, jobId)) - second!.startedAt.getTime();
    expect(wait).toBeGreaterThanOrEqual(1_000);
    expect(wait).toBeLessThan(2_000);

    // And the third attempt is the last: the new policy's attempts, not the settings' 5.
    const [failed] = await w.settled([jobId]);
    expect(failed).toMatchObject({ status: 'failed', attemptsMade: 3 });
    expect(merchant.requests).toHaveLength(3);
    expect(await (await w.finishedJob(jobId)).getState()).toBe('failed');
  });

  it("times a callback out after its target's time limit, while another target's callback takes the default", async () => {
    const w = world({ DELIVERY_ATTEMPTS: '1', CALLBACK_TIMEOUT_MS: '5000' });
    const slow = await receiver(always({ status: 200, delayMs: 1_000 }));
    const strict = await w.createTarget(`${slow.origin}/strict`);
    const lenient = await w.createTarget(`${slow.origin}/lenient`);
    await setPolicy(w, strict.programId, { timeoutMs: 300 });
    w.startWorker();
    const [timedOut] = await w.sendEvents(strict.programId);
    const [answered] = await w.sendEvents(lenient.programId);

    const [strictDelivery] = await w.settled([timedOut!.deliveryId]);
    expect(strictDelivery).toMatchObject({ status: 'failed', lastError: 'no answer within 300 ms' });
    const [attempt] = await w.attempts(timedOut!.deliveryId);
    expect(attempt).toMatchObject({ errorKind: 'timeout' });
    expect(attempt!.durationMs).toBeGreaterThanOrEqual(290);
    expect(attempt!.durationMs).toBeLessThan(1_000);

    const [lenientDelivery] = await w.settled([answered!.deliveryId]);
    expect(lenientDelivery).toMatchObject({ status: 'succeeded', attemptsMade: 1 });
  });
});
