import { randomBytes, randomUUID } from 'node:crypto';
import type { DeliveryRef } from '@herald/domain';
import { createDeliveryProducer, createRedisConnection, fairShareKey } from '../src';

// The Redis every test uses; REDIS_URL set in the shell is the running system's, not the tests'.
const REDIS_URL = 'redis://127.0.0.1:6379';
const RETRY = { attempts: 1, keepCompletedSeconds: 60, keepFailedSeconds: 60 };

const ref = (): DeliveryRef => ({ deliveryId: randomUUID(), eventId: `Event-${randomUUID()}`, targetId: randomUUID(), programId: 'p1', merchantId: null });

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
