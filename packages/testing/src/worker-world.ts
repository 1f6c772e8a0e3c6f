import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { loadWorkerConfig, testDatabaseUrl, type WorkerConfig } from '@herald/config';
import { credentialsCipherFromConfig, deliveryRepository, type DatabasePool, targetRepository, tenantRepository, type TargetAuth } from '@herald/db';
import { createPrismaClient, sqlPool, type PrismaClient } from '@herald/db/prisma';
import type { Event, TargetOrdering } from '@herald/domain';
import { createLogger, type Logger } from '@herald/logging';
import { createMetrics, type HeraldMetrics } from '@herald/metrics';
import { createDeliveryProducer, createRedisConnection, type DeliveryProducer, type DeliveryQueue, type RedisConnection } from '@herald/queue';
import { startHttpRecorder, type HttpRecorder, type Responder } from './http-recorder';
import { uniqueId } from './unique-id';
import { storeEvents } from './store-events';
import { waitFor } from './wait-for';

/**
 * How a World starts a delivery worker: the delivery-worker's startDeliveryWorker, given by the
 * caller from the service's entry point (packages never import services).
 */
export type StartWorker<W extends { close(): Promise<void> }> = (deps: {
  config: WorkerConfig;
  pool: DatabasePool;
  connection: RedisConnection;
  logger: Logger;
  metrics: HeraldMetrics;
}) => W;

/** Settings that keep the suite fast: tiny backoff, short timeouts; each test overrides what it checks. */
const FAST: Record<string, string> = {
  NODE_ENV: 'test',
  DELIVERY_ATTEMPTS: '3',
  DELIVERY_BACKOFF_MS: '10',
  DELIVERY_BACKOFF_JITTER: '0',
  CALLBACK_TIMEOUT_MS: '2000',
  OAUTH_TOKEN_TIMEOUT_MS: '2000',
};

/** A stored event and the delivery created for it. */
export interface SentEvent {
  event: Event;
  deliveryId: string;
}

/**
 * Everything one test needs, on the real PostgreSQL and Redis: its own queue prefix (so it never
 * sees another test's jobs, workers or tokens), a program with a notification target, events
 * enqueued through the real producer, and in-process delivery workers on their own Redis
 * connections, as separate processes would have.
 */
export class World<W extends { close(): Promise<void> } = { close(): Promise<void> }> {
  readonly config: WorkerConfig;
  /** For the tests' own queries and assertions. */
  readonly prisma: PrismaClient;
  /** The pool under `prisma`, which the workers and the repositories run on. */
  readonly pool: DatabasePool;
  readonly queue: DeliveryQueue;
  /** The metrics every worker of this world counts into, as the workers of one process would. */
  readonly metrics: HeraldMetrics = createMetrics({ service: 'delivery-worker' });
  readonly #redis: RedisConnection[] = [];
  readonly #workers: W[] = [];
  readonly #startWorker: StartWorker<W>;
  readonly #producer: DeliveryProducer;
  #logs = '';

  constructor(startWorker: StartWorker<W>, env: Record<string, string>, databaseUrl = testDatabaseUrl()) {
    this.#startWorker = startWorker;
    this.config = loadWorkerConfig({ ...FAST, DATABASE_URL: databaseUrl, QUEUE_PREFIX: uniqueId('test'), ...env });
    this.prisma = createPrismaClient(this.config.databaseUrl);
    this.pool = sqlPool(this.prisma);
    this.#producer = createDeliveryProducer(this.#connect('client'), { prefix: this.config.queuePrefix, retry: this.config.retry, timeoutMs: 5_000 });
    this.queue = this.#producer.queue;
  }

  /** Every log line the workers wrote (down to debug), to search for secrets. */
  logs(): string {
    return this.#logs;
  }

  /** Starts a delivery worker on its own Redis connection, as another process would be. */
  startWorker(): W {
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => (this.#logs += chunk.toString('utf8')));
    const worker = this.#startWorker({
      config: this.config,
      pool: this.pool,
      connection: this.#connect('worker'),
      logger: createLogger({ level: 'debug', service: 'test-worker', stream }),
      metrics: this.metrics,
    });
    this.#workers.push(worker);
    return worker;
  }

  /** A new program whose program-level target is `url` with `auth` (none by default), delivering in `ordering` (none by default). */
  async createTarget(url: string, auth: TargetAuth = { mode: 'none' }, ordering: TargetOrdering = 'none'): Promise<{ programId: string; targetId: string }> {
    const program = await tenantRepository(this.pool).createProgram({ id: uniqueId('p'), name: 'Program' });
    const target = await this.targets().upsert({ kind: 'program', programId: program.id }, { url, auth, notifications: {}, enabled: true, ordering });
    return { programId: program.id, targetId: target.id };
  }

  /** The program's target repository (to change or delete targets). */
  targets() {
    return targetRepository(this.pool, credentialsCipherFromConfig(this.config));
  }

  /**
   * Stores `n` events of the program (one delivery each, to its target), in one ingest, then
   * enqueues them as the events-api does. Each event is of its own object (`sub-<i>`), unless
   * `objectOf(i)` names the object of the i-th.
   */
  async sendEvents(programId: string, n = 1, objectOf: (i: number) => string = (i) => `sub-${i}`): Promise<SentEvent[]> {
    const { events, deliveries } = await storeEvents(
      this.pool,
      Array.from({ length: n }, (_, i) => ({
        event: {
          id: `Event-${randomUUID()}`,
          createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
          sourceSystem: 'subscription-module',
          origin: 'automated',
          eventType: 'status.updated',
          objectId: objectOf(i),
          objectType: 'subscription',
          metadata: { plan: 'gold', note: 'ü "quoted"' },
          context: `test ${i}`,
        } as Omit<Event, 'sequence'>,
        programId,
        contentHash: randomUUID(),
      })),
    );
    await this.#producer.enqueue(deliveries);
    await deliveryRepository(this.pool).markEnqueued(deliveries);
    return events.map((event) => ({ event, deliveryId: deliveries.find((d) => d.eventId === event.id)!.deliveryId }));
  }

  /** The deliveries, once every one of them is in a status of `statuses` (polls; fails after `timeoutMs`). */
  async settled(deliveryIds: string[], statuses: string[] = ['succeeded', 'failed'], timeoutMs = 15_000) {
    return waitFor(
      () => this.prisma.delivery.findMany({ where: { id: { in: deliveryIds } } }),
      (rows) => rows.length === deliveryIds.length && rows.every((row) => statuses.includes(row.status)),
      timeoutMs,
      `deliveries to reach ${statuses.join(' or ')}`,
    );
  }

  /** The delivery's job, once BullMQ has finished it (completed, or failed for good). */
  async finishedJob(deliveryId: string) {
    const job = await waitFor(
      () => this.queue.getJob(deliveryId),
      (found) => found?.finishedOn !== undefined,
      5_000,
      `job ${deliveryId} to finish`,
    );
    return job!;
  }

  /** One delivery's attempts, in order. */
  attempts(deliveryId: string) {
    return this.prisma.deliveryAttempt.findMany({ where: { deliveryId }, orderBy: { number: 'asc' } });
  }

  /** Closes every worker (waiting for jobs in flight), removes the queue and this test's keys, closes connections. */
  async close(): Promise<void> {
    await Promise.all(this.#workers.map((worker) => worker.close()));
    await this.queue.obliterate({ force: true });
    await this.#producer.close();
    const [admin] = this.#redis;
    const keys = await admin!.keys(`${this.config.queuePrefix}:*`);
    if (keys.length > 0) await admin!.del(...keys);
    await Promise.all(this.#redis.map((redis) => redis.quit()));
    await this.prisma.$disconnect();
  }

  #connect(role: 'worker' | 'client'): RedisConnection {
    const redis = createRedisConnection(this.config.redisUrl, { role });
    redis.on('error', () => undefined);
    this.#redis.push(redis);
    return redis;
  }
}

/** Registers an afterEach that closes every World the test made, even when it failed. */
export function useWorlds<W extends { close(): Promise<void> }>(startWorker: StartWorker<W>): (env?: Record<string, string>, databaseUrl?: string) => World<W> {
  const open: Array<World<W>> = [];
  afterEach(async () => {
    // One after another: two worlds of a test may share a queue (QUEUE_PREFIX), and BullMQ refuses an
    // obliterate that races another on the same queue.
    for (const world of open.splice(0)) await world.close();
  });
  return (env = {}, databaseUrl) => {
    const world = new World(startWorker, env, databaseUrl);
    open.push(world);
    return world;
  };
}

/** Registers an afterEach that closes every loopback HTTP server (receiver, token endpoint) the test started. */
export function useHttpRecorders(): (responder?: Responder) => Promise<HttpRecorder> {
  const open: HttpRecorder[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((recorder) => recorder.close()));
  });
  return async (responder) => {
    const recorder = await startHttpRecorder(responder);
    open.push(recorder);
    return recorder;
  };
}
