import { randomBytes, randomUUID } from 'node:crypto';
import { Worker } from 'bullmq';
import type { DeliveryRef } from '@herald/domain';
import { deliveryRefs } from './support/delivery-refs';
import { waitFor } from '@herald/testing';
import {
  createDeliveryProducer,
  createFairShare,
  createRedisConnection,
  DELIVERIES_QUEUE,
  fairShareKey,
  MAX_PRIORITY,
  pingRedis,
  type DeliveryProducer,
  type RedisConnection,
} from '../src';

// The Redis every test uses; REDIS_URL set in the shell is the running system's, not the tests'.
const REDIS_URL = 'redis://127.0.0.1:6379';
const RETRY = { attempts: 1, keepCompletedSeconds: 60, keepFailedSeconds: 60, keepCompletedMax: 1_000, keepFailedMax: 1_000 };

let client: RedisConnection;
let workerConnection: RedisConnection;
let producer: DeliveryProducer;
let worker: Worker<DeliveryRef>;
const token = randomUUID();

beforeEach(async () => {
  const prefix = `test_${randomBytes(6).toString('hex')}`;
  client = createRedisConnection(REDIS_URL, { role: 'client' });
  workerConnection = createRedisConnection(REDIS_URL, { role: 'worker' });
  await pingRedis(client);
  producer = createDeliveryProducer(client, { prefix, retry: RETRY, timeoutMs: 5_000 });
  // No processor: the test takes jobs one by one, in the order any worker would get them.
  worker = new Worker<DeliveryRef>(DELIVERIES_QUEUE, null, { connection: workerConnection, prefix, autorun: false });
});

afterEach(async () => {
  await producer.queue.obliterate({ force: true }).catch(() => undefined);
  await client.del(fairShareKey(producer.queue)).catch(() => undefined);
  await worker.close();
  await producer.close();
  client.disconnect();
  workerConnection.disconnect();
});

/** Takes the next job as a worker would, completes it, and returns it. */
async function takeNext(): Promise<DeliveryRef> {
  const job = await worker.getNextJob(token, { block: false });
  if (!job) throw new Error('no job waiting');
  await job.moveToCompleted('done', token, false);
  return job.data;
}

/** The ids of the next `count` jobs, taken one after another. */
async function takeIds(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) ids.push((await takeNext()).deliveryId);
  return ids;
}

async function takeAll(): Promise<DeliveryRef[]> {
  const taken: DeliveryRef[] = [];
  while ((await producer.queue.getJobCountByTypes('prioritized', 'wait')) > 0) taken.push(await takeNext());
  return taken;
}

/** Enqueues in batches of `size`, as the API does for a large ingest. */
async function enqueueInBatches(refs: DeliveryRef[], size: number): Promise<void> {
  for (let i = 0; i < refs.length; i += size) await producer.enqueue(refs.slice(i, i + size));
}

describe('fair scheduling across notification targets', () => {
  it("takes another target's single job among the first few, after a burst of 2,000 to one target", async () => {
    const burst = deliveryRefs(randomUUID(), 2_000);
    await enqueueInBatches(burst, 500);
    const [other] = deliveryRefs(randomUUID(), 1);
    await producer.enqueue([other!]);

    expect(await takeIds(3)).toContain(other!.deliveryId);
  });

  it('interleaves the backlogs of two targets and keeps each target in the order it was enqueued', async () => {
    const a = deliveryRefs(randomUUID(), 60);
    const b = deliveryRefs(randomUUID(), 30);
    // A's jobs first, in batches, then B's while A's still wait, then more of A.
    await enqueueInBatches(a.slice(0, 40), 10);
    await enqueueInBatches(b, 15);
    await producer.enqueue(a.slice(40));

    const taken = await takeAll();
    const ids = (refs: DeliveryRef[]): string[] => refs.map((r) => r.deliveryId);
    expect(ids(taken.filter((job) => job.targetId === a[0]!.targetId))).toEqual(ids(a));
    expect(ids(taken.filter((job) => job.targetId === b[0]!.targetId))).toEqual(ids(b));
    // Interleaved: B's 30 jobs are all taken within the first 2 x 30 (+1) jobs, not after A's 60.
    const lastOfB = taken.findIndex((job) => job.deliveryId === b[29]!.deliveryId);
    expect(lastOfB).toBeLessThanOrEqual(61);
  });

  it('gives every job of a batch with several targets a place in its own target’s backlog', async () => {
    const a = deliveryRefs(randomUUID(), 3);
    const b = deliveryRefs(randomUUID(), 3);
    await producer.enqueue([a[0]!, b[0]!, a[1]!, a[2]!, b[1]!, b[2]!]);
    const jobs = await Promise.all([...a, ...b].map((ref) => producer.queue.getJob(ref.deliveryId)));
    expect(jobs.map((job) => job!.opts.priority)).toEqual([1, 2, 3, 1, 2, 3]);
  });

  it('does not push a target that sends steadily, and is always served, behind a newer burst', async () => {
    const steady = randomUUID();
    // 300 jobs of one target, each taken before the next is sent, while another target's backlog
    // keeps the queue from draining (which would reset every place anyway).
    await producer.enqueue(deliveryRefs(randomUUID(), 1));
    for (const ref of deliveryRefs(steady, 300)) {
      await producer.enqueue([ref]);
      const job = await worker.getNextJob(token, { block: false });
      await job!.moveToCompleted('done', token, false);
    }
    await enqueueInBatches(deliveryRefs(randomUUID(), 1_000), 500);
    const [next] = deliveryRefs(steady, 1);
    await producer.enqueue([next!]);

    expect(await takeIds(4)).toContain(next!.deliveryId);
  });

  it("places a quiet target's job right behind a retry that came back with its old, low priority", async () => {
    await enqueueInBatches(deliveryRefs(randomUUID(), 100), 100);
    await takeIds(60);
    // A job retried after its backoff keeps the priority it was first given (here 3).
    const [retried] = deliveryRefs(randomUUID(), 1);
    await producer.queue.add('retried', retried!, { jobId: retried!.deliveryId, priority: 3 });
    const [quiet] = deliveryRefs(randomUUID(), 1);
    await producer.enqueue([quiet!]);
    expect((await producer.queue.getJob(quiet!.deliveryId))!.opts.priority).toBe(4);
    expect(await takeIds(2)).toEqual([retried!.deliveryId, quiet!.deliveryId]);
  });

  it('gives a requeued (replayed or lost) job a place by the same rule', async () => {
    await enqueueInBatches(deliveryRefs(randomUUID(), 100), 100);
    const [lost] = deliveryRefs(randomUUID(), 1);
    expect(await producer.requeueDead([lost!])).toEqual(new Set([lost!.deliveryId]));
    expect((await producer.queue.getJob(lost!.deliveryId))!.opts.priority).toBeGreaterThanOrEqual(1);
    expect(await takeIds(3)).toContain(lost!.deliveryId);
  });

  it('forgets every place once the queue drains, and lets its records expire', async () => {
    const target = randomUUID();
    await enqueueInBatches(deliveryRefs(target, 50), 25);
    await takeAll();
    const [again] = deliveryRefs(target, 1);
    await producer.enqueue([again!]);
    expect((await producer.queue.getJob(again!.deliveryId))!.opts.priority).toBe(1);

    const key = fairShareKey(producer.queue);
    expect(await client.hgetall(key)).toEqual({ [target]: '1', [`${target}:job`]: again!.deliveryId });
    const ttl = await client.ttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(86_400);

    const shortLived = createFairShare(client, { prioritizedKey: producer.queue.toKey('prioritized'), recordsKey: key, recordsTtlSeconds: 1 });
    await shortLived([{ jobId: randomUUID(), targetId: target }]);
    await waitFor(
      () => client.exists(key),
      (exists) => exists === 0,
      10_000,
      'the records to expire',
    );
    expect(await client.exists(key)).toBe(0);
  });

  it("caps priorities at BullMQ's highest, where jobs keep the order they were added in", async () => {
    const [head] = deliveryRefs(randomUUID(), 1);
    await producer.queue.add('head', head!, { jobId: head!.deliveryId, priority: MAX_PRIORITY - 1 });
    const refs = deliveryRefs(randomUUID(), 3);
    await producer.enqueue(refs);
    const priorities = await Promise.all(refs.map(async (ref) => (await producer.queue.getJob(ref.deliveryId))!.opts.priority));
    expect(priorities).toEqual([MAX_PRIORITY, MAX_PRIORITY, MAX_PRIORITY]);
    expect((await takeAll()).map((job) => job.deliveryId)).toEqual([head!.deliveryId, ...refs.map((ref) => ref.deliveryId)]);
  });
});
