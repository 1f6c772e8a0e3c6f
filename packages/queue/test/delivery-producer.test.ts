import { randomBytes, randomUUID } from 'node:crypto';
import type { DeliveryRef } from '@herald/domain';
import { UnrecoverableError, Worker } from 'bullmq';
import { ADD_CHUNK_JOBS, createDeliveryProducer, createRedisConnection, fairShareKey } from '../src';

// The Redis every test uses; REDIS_URL set in the shell is the running system's, not the tests'.
const REDIS_URL = 'redis://127.0.0.1:6379';
const RETRY = { keepCompletedSeconds: 60, keepFailedSeconds: 60, keepCompletedMax: 1_000, keepFailedMax: 1_000 };

const ref = (): DeliveryRef => ({
  deliveryId: randomUUID(),
  eventId: `Event-${randomUUID()}`,
  targetId: randomUUID(),
  programId: 'p1',
  merchantId: null,
  targetOwner: 'program',
});

describe('the delivery producer', () => {
  it('enqueues on a connection still making its first connect, as a process does right after it starts', async () => {
    const connection = createRedisConnection(REDIS_URL, { role: 'client' });
    const producer = createDeliveryProducer(connection, { prefix: `test_${randomBytes(6).toString('hex')}`, retry: RETRY, timeoutMs: 5_000 });
    try {
      expect(connection.status).not.toBe('ready');
      const delivery = ref();
      await producer.enqueue([delivery]);
      expect((await producer.queue.getJob(delivery.deliveryId))?.data).toEqual(delivery);
    } finally {
      await producer.queue.obliterate({ force: true }).catch(() => undefined);
      await connection.del(fairShareKey(producer.queue)).catch(() => undefined);
      await producer.close();
      connection.disconnect();
    }
  });

  it("adds every job of a batch larger than one pipeline, each target's jobs in the order given", async () => {
    const connection = createRedisConnection(REDIS_URL, { role: 'client' });
    const producer = createDeliveryProducer(connection, { prefix: `test_${randomBytes(6).toString('hex')}`, retry: RETRY, timeoutMs: 5_000 });
    // Three targets in turn, over two and a half pipelines: a pipeline ends between jobs of one
    // priority, which BullMQ serves in the order they were added.
    const targets = [randomUUID(), randomUUID(), randomUUID()];
    const refs = Array.from({ length: Math.floor(ADD_CHUNK_JOBS * 2.5) }, (_, i) => ({ ...ref(), targetId: targets[i % 3]! }));
    try {
      await producer.enqueue(refs);
      // The order BullMQ will serve them in: by priority, then by when each was added.
      const served = (await producer.queue.getJobs(['prioritized'], 0, -1, true)).map((job) => job.id);
      expect(served).toEqual(refs.map((r) => r.deliveryId));
    } finally {
      await producer.queue.obliterate({ force: true }).catch(() => undefined);
      await connection.del(fairShareKey(producer.queue)).catch(() => undefined);
      await producer.close();
      connection.disconnect();
    }
  });

  it('keeps at most keepCompletedMax delivered jobs and keepFailedMax failed ones, however young', async () => {
    const connection = createRedisConnection(REDIS_URL, { role: 'client' });
    const workerConnection = createRedisConnection(REDIS_URL, { role: 'worker' });
    const producer = createDeliveryProducer(connection, {
      prefix: `test_${randomBytes(6).toString('hex')}`,
      retry: { ...RETRY, keepCompletedMax: 2, keepFailedMax: 1 },
      timeoutMs: 5_000,
    });
    const refs = Array.from({ length: 8 }, ref);
    const failing = new Set(refs.slice(0, 3).map((r) => r.deliveryId));
    let finished = 0;
    const worker = new Worker(
      producer.queue.name,
      async (job) => {
        // Failed for good, as the delivery worker fails a job whose target's policy has no attempt left.
        if (failing.has(job.data.deliveryId)) throw new UnrecoverableError('refused');
      },
      { connection: workerConnection, prefix: producer.queue.opts.prefix },
    );
    const allFinished = new Promise<void>((resolve) => {
      const count = () => (++finished === refs.length ? resolve() : undefined);
      worker.on('completed', count);
      worker.on('failed', count);
    });
    try {
      await producer.enqueue(refs);
      await allFinished;
      expect(await producer.queue.getJobCounts('completed', 'failed')).toEqual({ completed: 2, failed: 1 });
    } finally {
      await worker.close();
      await producer.queue.obliterate({ force: true }).catch(() => undefined);
      await connection.del(fairShareKey(producer.queue)).catch(() => undefined);
      await producer.close();
      connection.disconnect();
      workerConnection.disconnect();
    }
  });

  it('fails at once, without waiting for its timeout, when Redis cannot be reached', async () => {
    const connection = createRedisConnection('redis://127.0.0.1:1', { role: 'client' });
    connection.on('error', () => undefined);
    const producer = createDeliveryProducer(connection, { prefix: `test_${randomBytes(6).toString('hex')}`, retry: RETRY, timeoutMs: 60_000 });
    producer.queue.on('error', () => undefined);
    try {
      const started = Date.now();
      await expect(producer.enqueue([ref()])).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await producer.close().catch(() => undefined);
      connection.disconnect();
    }
  });
});
