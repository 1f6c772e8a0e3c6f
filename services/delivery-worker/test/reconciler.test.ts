import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { credentialsCipherFromConfig, deliveryAttemptRepository, deliveryRepository, objectOrderRepository } from '@herald/db';
import type { DeliveryRef } from '@herald/domain';
import { createLogger } from '@herald/logging';
import { createMetrics } from '@herald/metrics';
import { createDeliveryProducer, createRedisConnection, DELIVERIES_QUEUE, pingRedis, type DeliveryProducer, type RedisConnection } from '@herald/queue';
import { always, metricValue, removeQueueKeys, useMigratedDatabase, waitFor } from '@herald/testing';
import { Worker } from 'bullmq';
import { startQueueLossWatch, startReconciler, type ReconcileResult, type Reconciler } from '@herald/outbox';
import { useHttpRecorders, useWorlds, type World } from './support/world';

// The reconciler requeues deliveries of every queue prefix it finds in its database: a database
// of this file's own keeps it away from the deliveries other test files are working on.
const database = useMigratedDatabase('herald_reconciler');

const world = useWorlds();
const startReceiver = useHttpRecorders();
const open: Array<{ close(): Promise<unknown> }> = [];
const connections: RedisConnection[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((thing) => thing.close()));
  for (const redis of connections.splice(0)) redis.disconnect();
});

/** A producer on a connection of its own, connected unless Redis is unreachable. */
async function producerOf(w: World, redisUrl = w.config.redisUrl): Promise<DeliveryProducer> {
  const redis = createRedisConnection(redisUrl, { role: 'client' });
  redis.on('error', () => undefined);
  connections.push(redis);
  await pingRedis(redis).catch(() => undefined);
  const producer = createDeliveryProducer(redis, { prefix: w.config.queuePrefix, retry: w.config.retry, timeoutMs: 2_000 });
  producer.queue.on('error', () => undefined);
  open.push(producer);
  return producer;
}

/** A reconciler of the world's queue; by default it checks every pending delivery at once (stale after 0 ms). */
async function reconcilerOf(
  w: World,
  producer?: DeliveryProducer,
  metrics = createMetrics({ service: 'test' }),
  staleAfterMs = 0,
  batchSize = 1_000,
): Promise<Reconciler> {
  const reconciler = startReconciler({
    deliveries: deliveryRepository(w.pool),
    order: objectOrderRepository(w.pool),
    producer: producer ?? (await producerOf(w)),
    config: { intervalMs: 3_600_000, staleAfterMs, batchSize },
    logger: createLogger({ level: 'error', service: 'test', stream: new PassThrough() }),
    metrics,
  });
  open.push({ close: () => reconciler.stop() });
  return reconciler;
}

/** A world on this file's database, where the deliveries earlier tests left pending are closed first. */
async function freshWorld(): Promise<World> {
  const w = world({}, database.url);
  await w.prisma.delivery.updateMany({ where: { status: 'pending' }, data: { status: 'failed' } });
  return w;
}

describe('the reconciler', () => {
  it('requeues pending deliveries whose jobs Redis lost, and the worker then delivers each once', async () => {
    const w = await freshWorld();
    const receiver = await startReceiver(always({ status: 200 }));
    const { programId } = await w.createTarget(`${receiver.origin}/hook`);
    const sent = await w.sendEvents(programId, 20);
    // Redis loses the queue (a restart without persistence, a FLUSHALL): every key of it is gone.
    await w.queue.obliterate({ force: true });
    expect(await w.queue.getJob(sent[0]!.deliveryId)).toBeUndefined();

    const metrics = createMetrics({ service: 'test' });
    const result = await (await reconcilerOf(w, undefined, metrics)).reconcileOnce();
    expect(result).toEqual({ checked: 20, requeued: 20, woken: 0 });
    expect(metricValue(await metrics.exposition(), 'herald_reconciler_requeued_total')).toBe(20);
    expect(metricValue(await metrics.exposition(), 'herald_reconciler_checked_total')).toBe(20);

    w.startWorker();
    const rows = await w.settled(
      sent.map((s) => s.deliveryId),
      ['succeeded', 'failed'],
    );
    expect(rows.every((row) => row.status === 'succeeded')).toBe(true);
    expect(new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size).toBe(20);
    expect(receiver.requests).toHaveLength(20);
  });

  it('leaves a pending delivery whose job is still queued alone, and stamps both as checked', async () => {
    const w = await freshWorld();
    const { programId } = await w.createTarget('https://merchant.example/hook');
    const [alive, lost] = await w.sendEvents(programId, 2);
    await w.queue.remove(lost!.deliveryId);
    const before = await w.queue.getJob(alive!.deliveryId);
    const reconciler = await reconcilerOf(w);

    expect(await reconciler.reconcileOnce()).toEqual({ checked: 2, requeued: 1, woken: 0 });
    const after = await w.queue.getJob(alive!.deliveryId);
    // The very same job: not removed and added again.
    expect(after!.timestamp).toBe(before!.timestamp);
    expect(await w.queue.getJobState(lost!.deliveryId)).toBe('prioritized');

    const rows = await w.prisma.delivery.findMany({ where: { id: { in: [alive!.deliveryId, lost!.deliveryId] } } });
    expect(rows.every((row) => row.queueCheckedAt !== null && row.status === 'pending')).toBe(true);
    const requeued = rows.find((row) => row.id === lost!.deliveryId)!;
    expect(requeued.enqueuedAt!.getTime()).toBe(requeued.queueCheckedAt!.getTime());
  });

  it('never checks a delivery twice when two reconcilers run at once', async () => {
    const w = await freshWorld();
    const { programId } = await w.createTarget('https://merchant.example/hook');
    await w.sendEvents(programId, 40);
    await w.queue.obliterate({ force: true });
    // Stale for an hour, checked after a minute: a delivery one pass has just checked is not stale
    // for the other, whichever order their transactions run in.
    await w.prisma.$executeRaw`UPDATE deliveries SET enqueued_at = now() - interval '1 hour' WHERE status = 'pending'`;
    const reconcilers = await Promise.all([reconcilerOf(w, undefined, undefined, 60_000), reconcilerOf(w, undefined, undefined, 60_000)]);
    const results = await Promise.all(reconcilers.map((r) => r.reconcileOnce()));
    expect(results.reduce((n, r) => n + r.requeued, 0)).toBe(40);
    expect(results.reduce((n, r) => n + r.checked, 0)).toBe(40);
    expect(await w.queue.getJobCountByTypes('prioritized')).toBe(40);
  });

  it("wakes an ordered target's parked callback whose predecessor got its outcome from a worker that stopped before waking it", async () => {
    const w = await freshWorld();
    const receiver = await startReceiver(always({ status: 200 }));
    const { programId } = await w.createTarget(`${receiver.origin}/hook`, { mode: 'none' }, 'object');
    const [first, second] = await w.sendEvents(programId, 2, () => 'obj-0');
    // A worker takes both jobs, parks the second behind the first, records the first's 200 and
    // completes its job, then stops: the wake-up never comes.
    const connection = createRedisConnection(w.config.redisUrl, { role: 'worker' });
    connections.push(connection);
    const stopping = new Worker<DeliveryRef>(DELIVERIES_QUEUE, null, { connection, prefix: w.config.queuePrefix, autorun: false });
    open.push(stopping);
    const [firstToken, secondToken] = [randomUUID(), randomUUID()];
    const firstJob = (await stopping.getNextJob(firstToken))!;
    const secondJob = (await stopping.getNextJob(secondToken))!;
    expect([firstJob.id, secondJob.id]).toEqual([first!.deliveryId, second!.deliveryId]);
    const order = objectOrderRepository(w.pool);
    const parkedBehind = await order.predecessor({ deliveryId: second!.deliveryId });
    expect(parkedBehind).toBe(first!.deliveryId);
    await order.markWaiting({ deliveryId: second!.deliveryId }, parkedBehind!, new Date());
    await secondJob.moveToDelayed(Date.now() + 3_600_000, secondToken);
    await deliveryAttemptRepository(w.pool, credentialsCipherFromConfig(w.config)).recordAttempts([
      { deliveryId: first!.deliveryId, attempt: { startedAt: new Date(), durationMs: 3, statusCode: 200 }, outcome: 'succeeded' },
    ]);
    await firstJob.moveToCompleted({ outcome: 'delivered' }, firstToken, false);
    expect(await w.queue.getJobState(second!.deliveryId)).toBe('delayed');

    // Its job is alive (delayed): nothing to requeue, one wait to wake.
    expect(await (await reconcilerOf(w)).reconcileOnce()).toEqual({ checked: 1, requeued: 0, woken: 1 });
    expect(await w.queue.getJobState(second!.deliveryId)).not.toBe('delayed');
    w.startWorker();
    const [row] = await w.settled([second!.deliveryId], ['succeeded']);
    expect(row).toMatchObject({ waitingFor: null, attemptsMade: 1 });
    expect(receiver.requests).toHaveLength(1);
  });

  it('requeues a delivery whose job BullMQ failed for stalling too often, which the processor never records', async () => {
    const w = await freshWorld();
    const receiver = await startReceiver(always({ status: 200 }));
    const { programId } = await w.createTarget(`${receiver.origin}/hook`);
    const [sent] = await w.sendEvents(programId, 1);
    // A worker that dies holding the job: it takes the job and its lock is never renewed. Another
    // worker's stalled-job check, allowing no stall, then marks the job to fail, as BullMQ does
    // after maxStalledCount stalls (one per worker death, WORKER_LOCK_DURATION_MS after it).
    const connection = createRedisConnection(w.config.redisUrl, { role: 'worker' });
    connections.push(connection);
    const dying = new Worker<DeliveryRef>(DELIVERIES_QUEUE, null, { connection, prefix: w.config.queuePrefix, autorun: false, lockDuration: 300 });
    const checker = new Worker<DeliveryRef>(DELIVERIES_QUEUE, null, {
      connection,
      prefix: w.config.queuePrefix,
      autorun: false,
      maxStalledCount: 0,
      stalledInterval: 200,
    });
    open.push(dying, checker);
    expect((await dying.getNextJob(randomUUID()))?.id).toBe(sent!.deliveryId);
    const stalled = new Promise((resolve) => checker.once('stalled', resolve));
    void checker.startStalledCheckTimer();
    await stalled;
    await checker.close();

    // The next worker to take the job fails it at once, without running the processor: the
    // delivery stays pending, no attempt recorded, nothing sent.
    w.startWorker();
    const failed = await waitFor(
      () => w.queue.getJob(sent!.deliveryId),
      (job) => job?.finishedOn !== undefined,
      10_000,
      'the stalled job to fail',
    );
    expect(await failed!.getState()).toBe('failed');
    expect(failed!.failedReason).toMatch(/stalled more than allowable limit/);
    const stuck = await w.prisma.delivery.findFirstOrThrow({ where: { id: sent!.deliveryId } });
    expect(stuck.status).toBe('pending');
    expect(await w.attempts(sent!.deliveryId)).toHaveLength(0);
    expect(receiver.requests).toHaveLength(0);

    expect(await (await reconcilerOf(w)).reconcileOnce()).toEqual({ checked: 1, requeued: 1, woken: 0 });
    const [row] = await w.settled([sent!.deliveryId], ['succeeded', 'failed']);
    expect(row!.status).toBe('succeeded');
    expect(receiver.requests).toHaveLength(1);
  });

  it('fails a pass cleanly while Redis is unreachable, leaving the deliveries for the next pass', async () => {
    const w = await freshWorld();
    const { programId } = await w.createTarget('https://merchant.example/hook');
    const sent = await w.sendEvents(programId, 3);
    await w.queue.obliterate({ force: true });
    await expect((await reconcilerOf(w, await producerOf(w, 'redis://127.0.0.1:1'))).reconcileOnce()).rejects.toThrow(/Redis is not connected/);
    const rows = await w.prisma.delivery.findMany({ where: { id: { in: sent.map((s) => s.deliveryId) } } });
    expect(rows.every((row) => row.queueCheckedAt === null)).toBe(true);
    expect(await (await reconcilerOf(w)).reconcileOnce()).toEqual({ checked: 3, requeued: 3, woken: 0 });
  });
});

describe('after Redis lost the queue', () => {
  it('notices within the loss check interval and requeues every pending delivery, however recently enqueued, batch after batch', async () => {
    const w = await freshWorld();
    const receiver = await startReceiver(always({ status: 200 }));
    const { programId } = await w.createTarget(`${receiver.origin}/hook`);
    const sent = await w.sendEvents(programId, 25);
    const producer = await producerOf(w);
    // As in production: nothing counts as stale for five minutes, and a pass takes 10 at most.
    const reconciler = await reconcilerOf(w, producer, createMetrics({ service: 'test' }), 300_000, 10);
    const redis = createRedisConnection(w.config.redisUrl, { role: 'client' });
    connections.push(redis);
    await pingRedis(redis);
    const recoveries: Array<Promise<ReconcileResult>> = [];
    const watch = startQueueLossWatch({
      redis,
      queue: producer.queue,
      intervalMs: 100,
      logger: createLogger({ level: 'error', service: 'test', stream: new PassThrough() }),
      onLoss: (lostAt) => recoveries.push(reconciler.reconcileSince(lostAt)),
    });
    open.push({ close: () => watch.stop() });
    const marker = `${producer.queue.qualifiedName}:outbox-marker`;
    await waitFor(
      () => redis.exists(marker),
      (n) => n === 1,
      5_000,
      'the marker key',
    );
    expect(await reconciler.reconcileOnce()).toEqual({ checked: 0, requeued: 0, woken: 0 });

    // Redis loses the queue (a restart without persistence, a FLUSHALL): every key under its prefix is gone.
    await removeQueueKeys(w.config.redisUrl, w.config.queuePrefix);
    expect(await redis.exists(marker)).toBe(0);
    await waitFor(
      () => recoveries.length,
      (n) => n > 0,
      5_000,
      'the loss to be noticed',
    );
    expect(await recoveries[0]).toEqual({ checked: 25, requeued: 25 });
    expect((await Promise.all(sent.map((s) => w.queue.getJob(s.deliveryId)))).every(Boolean)).toBe(true);
    expect(recoveries).toHaveLength(1);
  });
});
