// Ordered delivery end to end (a target with ordering `object`): real workers (in this process and
// in separate processes), BullMQ, PostgreSQL and HTTP receivers on 127.0.0.1.
import { randomUUID } from 'node:crypto';
import { credentialsCipherFromConfig, deliveryAttemptRepository, objectOrderRepository } from '@herald/db';
import type { DeliveryRef } from '@herald/domain';
import { createRedisConnection, DELIVERIES_QUEUE, wakeParkedJobs } from '@herald/queue';
import { callbackEvent, objectOrderViolations, useMigratedDatabase, type HttpRecorder, type RecordedRequest, type Reply } from '@herald/testing';
import { Worker } from 'bullmq';
import { createObjectOrder } from '../src/object-order';
import { useHttpRecorders, useWorkerProcesses, useWorlds, type World } from './support/world';

// Worker processes run their sweepers and reconcilers: a database of their own, as in target-gate.test.ts.
const database = useMigratedDatabase('herald_worker_order');
const world = useWorlds();
const startReceiver = useHttpRecorders();
const startWorkers = useWorkerProcesses(database);

/**
 * A receiver's responder: the status `decide` gives each callback (by its event and how many times
 * that event came), answered after `delayMs`. The recorder keeps each answer's status and time.
 */
function answering(decide: (event: ReturnType<typeof callbackEvent>, tries: number) => number, delayMs = 0) {
  const tries = new Map<string, number>();
  return (request: RecordedRequest): Reply => {
    const event = callbackEvent(request);
    const n = (tries.get(event.id) ?? 0) + 1;
    tries.set(event.id, n);
    const status = decide(event, n);
    return { status, body: status === 200 ? 'ok' : 'not now', delayMs };
  };
}

/** The objects obj-0 … obj-<n - 1>. */
const objects = (n: number): string[] => Array.from({ length: n }, (_, o) => `obj-${o}`);

/** The 200s the receiver answered, as `objectId#sequence`, in the order they arrived. */
const delivered = (receiver: HttpRecorder): string[] =>
  receiver.requests.filter((r) => r.answer?.status === 200).map((r) => `${callbackEvent(r).objectId}#${callbackEvent(r).sequence}`);

/** `perObject` events of each of `objects` objects, interleaved (obj-0 #1, obj-1 #1, …, obj-0 #2, …). */
function interleaved(objects: number): (i: number) => string {
  return (i) => `obj-${i % objects}`;
}

async function rowsOf(w: World, deliveryIds: string[]) {
  return w.prisma.delivery.findMany({ where: { id: { in: deliveryIds } } });
}

describe('ordered delivery per object', () => {
  it("sends an object's callbacks in sequence order, each after the previous one's 200, while a failing object holds no other back", async () => {
    // obj-0's first event fails its first try: its retry comes after a backoff of 1.5 s.
    const receiver = await startReceiver(answering((event, tries) => (event.objectId === 'obj-0' && event.sequence === 1 && tries === 1 ? 500 : 200)));
    const w = world({ DELIVERY_BACKOFF_MS: '1500', WORKER_CONCURRENCY: '8' });
    const { programId } = await w.createTarget(`${receiver.origin}/hook`, { mode: 'none' }, 'object');
    w.startWorker();
    const sent = await w.sendEvents(programId, 12, interleaved(3));
    await w.settled(
      sent.map((s) => s.deliveryId),
      ['succeeded'],
      30_000,
    );

    expect(objectOrderViolations(receiver.requests, objects(3), 4)).toEqual({ outOfOrder: [], early: [] });
    // The other objects were all delivered while obj-0's first event waited for its retry.
    expect(delivered(receiver).indexOf('obj-0#1')).toBe(8);
    // obj-0's later events waited, parked: deferrals that spent no attempt.
    const rows = await rowsOf(
      w,
      sent.map((s) => s.deliveryId),
    );
    const waited = rows.filter((row) => row.lastDeferralReason === 'awaiting_predecessor');
    expect(waited.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.attemptsMade).toBe(row.eventId === sent[0]!.event.id ? 2 : 1);
    for (const row of rows) expect(row.waitingFor).toBeNull();
  }, 60_000);

  it('lets the next callback go once the previous one has failed for good', async () => {
    const receiver = await startReceiver(answering((event) => (event.sequence === 1 ? 500 : 200)));
    const w = world({ DELIVERY_ATTEMPTS: '2' });
    const { programId } = await w.createTarget(`${receiver.origin}/hook`, { mode: 'none' }, 'object');
    w.startWorker();
    const sent = await w.sendEvents(programId, 3, () => 'obj-0');
    const rows = await w.settled(sent.map((s) => s.deliveryId));

    expect(rows.find((row) => row.eventId === sent[0]!.event.id)!.status).toBe('failed');
    expect(rows.filter((row) => row.status === 'succeeded')).toHaveLength(2);
    // Both tries of #1 came before #2, #2 only once #1's last answer went out, and #2's 200 before #3.
    const [, lastOfFirst, second, third] = receiver.requests;
    expect(receiver.requests.map((r) => callbackEvent(r).sequence)).toEqual([1, 1, 2, 3]);
    expect(second!.receivedAt).toBeGreaterThanOrEqual(lastOfFirst!.answer!.at);
    expect(third!.receivedAt).toBeGreaterThanOrEqual(second!.answer!.at);
  }, 60_000);

  it('holds nothing back for a target that delivers in any order', async () => {
    const receiver = await startReceiver(answering((event, tries) => (event.sequence === 1 && tries === 1 ? 500 : 200)));
    const w = world({ DELIVERY_BACKOFF_MS: '1500' });
    const { programId } = await w.createTarget(`${receiver.origin}/hook`);
    w.startWorker();
    const sent = await w.sendEvents(programId, 3, () => 'obj-0');
    const rows = await w.settled(
      sent.map((s) => s.deliveryId),
      ['succeeded'],
      30_000,
    );

    // #2 and #3 went while #1 waited for its retry.
    expect(delivered(receiver)).toEqual(['obj-0#2', 'obj-0#3', 'obj-0#1']);
    expect(rows.every((row) => row.lastDeferralReason !== 'awaiting_predecessor')).toBe(true);
  }, 60_000);

  it('keeps the order across two worker processes, with a third of first tries failing', async () => {
    // A fixed third of the events (by id, so either process sees the same) fail their first try.
    const receiver = await startReceiver(answering((event, tries) => (tries === 1 && Number.parseInt(event.id.slice(-2), 16) % 3 === 0 ? 500 : 200), 5));
    const w = world({}, database.url);
    const { programId } = await w.createTarget(`${receiver.origin}/hook`, { mode: 'none' }, 'object');
    const services = await startWorkers(w, 2, { WORKER_CONCURRENCY: '8', DELIVERY_BACKOFF_MS: '50', DELIVERY_BACKOFF_JITTER: '0' });
    const sent = [...(await w.sendEvents(programId, 40, interleaved(8))), ...(await w.sendEvents(programId, 40, interleaved(8)))];
    await w.settled(
      sent.map((s) => s.deliveryId),
      ['succeeded'],
      90_000,
    );

    expect(objectOrderViolations(receiver.requests, objects(8), 10)).toEqual({ outOfOrder: [], early: [] });
    for (const service of services) expect(service.output()).toContain('callback delivered');
  }, 120_000);

  it('wakes a parked job itself when its predecessor got its outcome between the mark and the park', async () => {
    const w = world();
    const { programId } = await w.createTarget('https://merchant.example/hook', { mode: 'none' }, 'object');
    const [first, second] = await w.sendEvents(programId, 2, () => 'obj-0');
    const connection = createRedisConnection(w.config.redisUrl, { role: 'worker' });
    const taker = new Worker<DeliveryRef>(DELIVERIES_QUEUE, null, { connection, prefix: w.config.queuePrefix, autorun: false });
    try {
      const token = randomUUID();
      await taker.getNextJob(randomUUID());
      const secondJob = (await taker.getNextJob(token))!;
      expect(secondJob.id).toBe(second!.deliveryId);
      const order = createObjectOrder({ repository: objectOrderRepository(w.pool), wake: (ids) => wakeParkedJobs(w.queue, ids), maxBatch: 8 });

      const waitedFor = await order.waitForPredecessor({ deliveryId: second!.deliveryId }, async (until) => {
        // Meanwhile the first gets its 200, and its worker looks for the callbacks waiting for it:
        // the second is marked, but its job is still running, not parked, so there is nothing to wake.
        await deliveryAttemptRepository(w.pool, credentialsCipherFromConfig(w.config)).recordAttempts([
          { deliveryId: first!.deliveryId, attempt: { startedAt: new Date(), durationMs: 2, statusCode: 200 }, outcome: 'succeeded' },
        ]);
        await order.releaseSuccessors({ deliveryId: first!.deliveryId });
        await secondJob.moveToDelayed(until, token);
      });

      expect(waitedFor).toBe(first!.deliveryId);
      // Not left delayed for an hour: it woke itself.
      expect(await w.queue.getJobState(second!.deliveryId)).toBe('prioritized');
    } finally {
      await taker.close();
      connection.disconnect();
    }
  });
});
