import { randomBytes, randomUUID } from 'node:crypto';
import { UnrecoverableError, Worker } from 'bullmq';
import { MAX_DELIVERY_ATTEMPTS, type DeliveryRef } from '@herald/domain';
import { createDeliveryProducer, createRedisConnection, DELIVERIES_QUEUE, fairShareKey, pingRedis, type DeliveryProducer, type RedisConnection } from '../src';

// The Redis every test uses; REDIS_URL set in the shell is the running system's, not the tests'.
const REDIS_URL = 'redis://127.0.0.1:6379';
// One attempt, so that a failure is final and the test needs no backoff strategy.
const RETRY = {
  backoffDelayMs: 1_000,
  backoffJitter: 0,
  keepCompletedSeconds: 3_600,
  keepFailedSeconds: 3_600,
  keepCompletedMax: 1_000,
  keepFailedMax: 1_000,
};

let client: RedisConnection;
let workerConnection: RedisConnection;
let producer: DeliveryProducer;
let worker: Worker<DeliveryRef>;

beforeEach(async () => {
  const prefix = `test_${randomBytes(6).toString('hex')}`;
  client = createRedisConnection(REDIS_URL, { role: 'client' });
  workerConnection = createRedisConnection(REDIS_URL, { role: 'worker' });
  await pingRedis(client);
  producer = createDeliveryProducer(client, { prefix, retry: RETRY, timeoutMs: 5_000 });
  // No processor: the test takes jobs by hand, so each ends exactly as the test says.
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

function delivery(): DeliveryRef {
  return { deliveryId: randomUUID(), eventId: `Event-${randomUUID()}`, targetId: randomUUID(), programId: 'p1', merchantId: 'm1', targetOwner: 'merchant' };
}

/** Takes the next job and ends it as the worker would after its last attempt. */
async function finishNextJob(outcome: 'completed' | 'failed'): Promise<void> {
  const token = randomUUID();
  const job = await worker.getNextJob(token);
  if (!job) throw new Error('no job to take');
  if (outcome === 'completed') await job.moveToCompleted('delivered', token, false);
  else await job.moveToFailed(new UnrecoverableError('merchant answered 500'), token, false);
}

/** A replay as the events-api does it: free the job id, then enqueue (after the database commit). */
async function replay(data: DeliveryRef) {
  const slots = await producer.removeFinishedJobs([data.deliveryId]);
  if (slots.get(data.deliveryId) === 'free') await producer.enqueue([data]);
  return slots;
}

describe('removeFinishedJobs, then enqueue: replaying a delivery', () => {
  it('creates a new waiting job for a delivery whose job completed, where a plain enqueue does nothing', async () => {
    const data = delivery();
    await producer.enqueue([data]);
    await finishNextJob('completed');
    const finished = (await producer.queue.getJob(data.deliveryId))!;
    expect(await finished.getState()).toBe('completed');

    await producer.enqueue([data]);
    expect(await producer.queue.getJobState(data.deliveryId)).toBe('completed');

    expect(await replay(data)).toEqual(new Map([[data.deliveryId, 'free']]));
    const again = (await producer.queue.getJob(data.deliveryId))!;
    expect(await again.getState()).toBe('prioritized');
    expect(again.finishedOn).toBeUndefined();
    expect(again.returnvalue).toBeNull();
    expect(again.timestamp).toBeGreaterThanOrEqual(finished.timestamp);
    expect(again.data).toEqual(data);
    expect(again.name).toBe(finished.name);
    expect(again.opts.attempts).toBe(MAX_DELIVERY_ATTEMPTS);
  });

  it('creates a new job with every attempt again for a delivery whose job failed', async () => {
    const data = delivery();
    await producer.enqueue([data]);
    await finishNextJob('failed');
    expect(await producer.queue.getJobState(data.deliveryId)).toBe('failed');

    expect(await replay(data)).toEqual(new Map([[data.deliveryId, 'free']]));
    const again = (await producer.queue.getJob(data.deliveryId))!;
    expect(await again.getState()).toBe('prioritized');
    expect(again.attemptsMade).toBe(0);
    expect(again.failedReason).toBeUndefined();
  });

  it('says the id is free for a delivery that has no job', async () => {
    const data = delivery();
    expect(await replay(data)).toEqual(new Map([[data.deliveryId, 'free']]));
    expect(await producer.queue.getJobState(data.deliveryId)).toBe('prioritized');
  });

  it('frees the id of a job whose hash outlived its place in the queue, which would otherwise block the add', async () => {
    const data = delivery();
    await producer.enqueue([data]);
    // Part of the queue lost (an evicting Redis): the job's hash is there, the prioritized set lost it.
    await client.zrem(`${producer.queue.opts.prefix}:${DELIVERIES_QUEUE}:prioritized`, data.deliveryId);
    expect(await producer.queue.getJobState(data.deliveryId)).toBe('unknown');
    await producer.enqueue([data]);
    expect(await producer.queue.getJobState(data.deliveryId)).toBe('unknown');

    expect(await replay(data)).toEqual(new Map([[data.deliveryId, 'free']]));
    expect(await producer.queue.getJobState(data.deliveryId)).toBe('prioritized');
  });

  it('gives a new job only to the deliveries whose job is gone or finished (requeueDead)', async () => {
    const [lost, done, waiting] = [delivery(), delivery(), delivery()];
    await producer.enqueue([done]);
    await finishNextJob('failed');
    await producer.enqueue([waiting]);
    const before = (await producer.queue.getJob(waiting.deliveryId))!;

    expect(await producer.requeueDead([lost, done, waiting])).toEqual(new Set([lost.deliveryId, done.deliveryId]));
    expect(await producer.queue.getJobCounts('prioritized', 'failed')).toEqual({ prioritized: 3, failed: 0 });
    expect((await producer.queue.getJob(waiting.deliveryId))!.timestamp).toBe(before.timestamp);
  });

  it('leaves a job that is still waiting or running, and a replay adds no second one', async () => {
    const waiting = delivery();
    const running = delivery();
    await producer.enqueue([running]);
    const active = (await worker.getNextJob(randomUUID()))!;
    expect(active.id).toBe(running.deliveryId);
    await producer.enqueue([waiting]);

    expect(await producer.removeFinishedJobs([waiting.deliveryId, running.deliveryId])).toEqual(
      new Map([
        [waiting.deliveryId, 'queued'],
        [running.deliveryId, 'queued'],
      ]),
    );
    await replay(waiting);
    expect(await producer.queue.getJobCounts('prioritized', 'active')).toEqual({ prioritized: 1, active: 1 });
  });

  it('refuses at once while Redis is not connected', async () => {
    const ended = new Promise((resolve) => client.once('end', resolve));
    client.disconnect();
    await ended;
    await expect(producer.removeFinishedJobs([randomUUID()])).rejects.toThrow(/Redis is not connected/);
  });
});
