import { PassThrough } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { loadWorkerConfig, type WorkerConfig } from '@herald/config';
import { applyMigrations, credentialsCipherFromConfig, deliveryRepository, targetRepository, tenantRepository, type DeliveryRepository } from '@herald/db';
import { createPrismaClient, sqlPool, type PrismaClient } from '@herald/db/prisma';
import { createLogger } from '@herald/logging';
import { createMetrics } from '@herald/metrics';
import { createDeliveryProducer, createRedisConnection, fairShareKey, type DeliveryProducer, type RedisConnection } from '@herald/queue';
import { createScratchDatabase, metricValue, storeEvents, uniqueId } from '@herald/testing';
import { startSweeper } from '@herald/outbox';

// A sweeper takes the unmarked deliveries of every queue prefix in its database, and skips rows
// another transaction holds: a database of this file's own keeps other test files' deliveries,
// sweepers and replays out of its counts.
let database: { url: string; drop: () => Promise<void> };
let config: WorkerConfig;
let prisma: PrismaClient;
let deliveries: DeliveryRepository;
let redis: RedisConnection;
const logger = createLogger({ level: 'error', service: 'test', stream: new PassThrough() });
const metrics = createMetrics({ service: 'test' });
let producer: DeliveryProducer;

beforeAll(async () => {
  database = await createScratchDatabase('herald_sweeper');
  await applyMigrations(database.url);
  config = loadWorkerConfig({ NODE_ENV: 'test', DATABASE_URL: database.url, QUEUE_PREFIX: uniqueId('test') });
  prisma = createPrismaClient(config.databaseUrl);
  deliveries = deliveryRepository(sqlPool(prisma));
  redis = createRedisConnection(config.redisUrl, { role: 'client' });
  producer = createDeliveryProducer(redis, { prefix: config.queuePrefix, retry: config.retry, timeoutMs: config.enqueueTimeoutMs });
});

afterAll(async () => {
  await producer.queue.obliterate({ force: true });
  await redis.del(fairShareKey(producer.queue));
  await producer.close();
  redis.disconnect();
  await prisma.$disconnect();
  await database.drop();
});

/**
 * Stores `n` events of a fresh tenant whose program and merchant both have a target, and leaves
 * their deliveries as the events-api does when adding their jobs failed: not enqueued, unmarked.
 */
async function storeUnenqueued(n: number): Promise<string[]> {
  const tenants = tenantRepository(sqlPool(prisma));
  const program = await tenants.createProgram({ id: uniqueId('p'), name: 'p' });
  const merchant = await tenants.createMerchant({ id: uniqueId('m'), programId: program.id, name: 'm' });
  const targets = targetRepository(sqlPool(prisma), credentialsCipherFromConfig(config));
  const target = { url: 'https://merchant.example/hooks', auth: { mode: 'none' as const }, notifications: {}, enabled: true };
  await targets.upsert({ kind: 'program', programId: program.id }, target);
  await targets.upsert({ kind: 'merchant', merchantId: merchant.id }, target);
  const result = await storeEvents(
    sqlPool(prisma),
    Array.from({ length: n }, () => ({
      event: {
        id: `Event-${randomUUID()}`,
        createdAt: new Date().toISOString(),
        origin: 'automated',
        eventType: 'created',
        objectId: 'o',
        objectType: 'payment',
      },
      programId: program.id,
      merchantId: merchant.id,
      contentHash: randomUUID(),
    })),
  );
  await deliveries.clearEnqueued(result.deliveries);
  return result.deliveries.map((d) => d.deliveryId);
}

describe('the outbox sweeper', () => {
  it('enqueues every delivery that was stored but never enqueued, exactly once, even with two sweepers at once', async () => {
    const ids = await storeUnenqueued(60);
    expect(ids).toHaveLength(120);
    const sweeperMetrics = createMetrics({ service: 'test' });
    const sweepers = [1, 2].map(() =>
      startSweeper({ deliveries, producer, logger, metrics: sweeperMetrics, config: { intervalMs: 60_000, graceMs: 0, batchSize: 1_000 } }),
    );
    try {
      const counts = await Promise.all([sweepers[0]!.sweepOnce(), sweepers[1]!.sweepOnce(), sweepers[0]!.sweepOnce()]);
      // Counted exactly once between the three sweeps.
      expect(counts.reduce((a, b) => a + b, 0)).toBe(120);
      expect(metricValue(await sweeperMetrics.exposition(), 'herald_sweeper_enqueued_total')).toBe(counts.reduce((a, b) => a + b, 0));
    } finally {
      await Promise.all(sweepers.map((s) => s.stop()));
    }
    const rows = await prisma.delivery.findMany({ where: { id: { in: ids } } });
    expect(rows.every((row) => row.enqueuedAt !== null)).toBe(true);
    const jobs = await Promise.all(ids.map((id) => producer.queue.getJob(id)));
    expect(jobs.every((job) => job !== undefined && job.data.deliveryId === job.id)).toBe(true);
    expect(await producer.queue.count()).toBe(120);
    const ours = (await producer.queue.getJobs(['waiting', 'delayed', 'active', 'prioritized'], 0, -1)).filter((job) => ids.includes(job.id!));
    expect(ours).toHaveLength(120);
  });

  it('leaves deliveries younger than the grace period to the events-api', async () => {
    const ids = await storeUnenqueued(3);
    const sweeper = startSweeper({ deliveries, producer, logger, metrics, config: { intervalMs: 60_000, graceMs: 60_000, batchSize: 1_000 } });
    try {
      await sweeper.sweepOnce();
    } finally {
      await sweeper.stop();
    }
    const rows = await prisma.delivery.findMany({ where: { id: { in: ids } } });
    expect(rows.every((row) => row.enqueuedAt === null)).toBe(true);
  });

  it('holds no row lock while it adds the jobs: the rows are claimed and committed first', async () => {
    const ids = await storeUnenqueued(2);
    // What another transaction can do to the claimed rows while the sweeper waits on Redis.
    const lockedByOthers: string[] = [];
    const probing: Pick<DeliveryProducer, 'enqueue'> = {
      async enqueue(refs) {
        const pool = sqlPool(prisma);
        try {
          await pool.query('select id from deliveries where id = any($1::uuid[]) for update nowait', [refs.map((r) => r.deliveryId)]);
        } catch (error) {
          lockedByOthers.push(String(error));
        }
        await producer.enqueue(refs);
      },
    };
    const sweeper = startSweeper({ deliveries, producer: probing, logger, metrics, config: { intervalMs: 60_000, graceMs: 0, batchSize: 1_000 } });
    try {
      // The earlier tests' deliveries left for the sweeper come along.
      expect(await sweeper.sweepOnce()).toBeGreaterThanOrEqual(ids.length);
    } finally {
      await sweeper.stop();
    }
    expect(lockedByOthers).toEqual([]);
    expect((await Promise.all(ids.map((id) => producer.queue.getJob(id)))).every(Boolean)).toBe(true);
  });

  it('fails a sweep cleanly while Redis is unreachable and enqueues on the next one', async () => {
    const ids = await storeUnenqueued(2);
    const down = createRedisConnection('redis://127.0.0.1:1', { role: 'client' });
    down.on('error', () => undefined);
    const downProducer = createDeliveryProducer(down, { prefix: config.queuePrefix, retry: config.retry, timeoutMs: 500 });
    downProducer.queue.on('error', () => undefined);
    const failing = startSweeper({ deliveries, producer: downProducer, logger, metrics, config: { intervalMs: 60_000, graceMs: 0, batchSize: 1_000 } });
    await expect(failing.sweepOnce()).rejects.toThrow();
    await failing.stop();
    await downProducer.close().catch(() => undefined);
    down.disconnect();
    expect((await prisma.delivery.findMany({ where: { id: { in: ids } } })).every((row) => row.enqueuedAt === null)).toBe(true);

    const working = startSweeper({ deliveries, producer, logger, metrics, config: { intervalMs: 60_000, graceMs: 0, batchSize: 1_000 } });
    try {
      await working.sweepOnce();
    } finally {
      await working.stop();
    }
    expect((await Promise.all(ids.map((id) => producer.queue.getJob(id)))).every(Boolean)).toBe(true);
  });
});
