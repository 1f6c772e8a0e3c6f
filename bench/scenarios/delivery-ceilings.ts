/**
 * Ceilings of delivery, same receiver, same concurrency: a raw POST loop (16 and 32 in flight),
 * 2 bare BullMQ worker processes + 1 POST each, and the durable delivery ceiling (bench/ceilings.ts)
 * in 2 processes. Their figures are what the delivery rows are set against.
 */
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import type { ServiceProcess } from '@herald/testing';
import { durableDeliveryCeiling, type Drain, type DrainResult } from '../ceilings';
import { createRawPoster } from '../raw-post';
import { REDIS_URL, SIZE, WORKER_CONCURRENCY } from '../settings';
import { cleanups, round, startProcess, type Bench, type Row } from './harness';
import { startService } from '../setup';

export const rawPoster = createRawPoster();

/** Ceiling 1: a raw POST loop (node:http, keep-alive) at the given concurrency. */
async function rawPostLoop(url: string, concurrency: number, total: number): Promise<number> {
  let sent = 0;
  const started = performance.now();
  const deadline = Date.now() + 60_000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < total && Date.now() < deadline) {
        sent += 1;
        await rawPoster.post(url);
      }
    }),
  );
  return sent / ((performance.now() - started) / 1000);
}

/**
 * Ceiling 2: bare BullMQ workers (no database), each in its own process like a delivery-worker,
 * whose processor does one raw POST to the receiver. Returns the rate the receiver saw them at.
 */
export async function bareBullmq(options: {
  url: string;
  concurrency: number;
  total: number;
  prefix: string;
  processes: number;
  drain: Drain;
}): Promise<DrainResult> {
  const queue = new Queue('bare', {
    connection: {
      host: '127.0.0.1',
      port: Number(new URL(REDIS_URL).port || 6379),
      db: Number(new URL(REDIS_URL).pathname.slice(1) || 0),
      maxRetriesPerRequest: null,
    },
    prefix: options.prefix,
  });
  const workers: ServiceProcess[] = [];
  try {
    for (let i = 0; i < options.total; i += 1000) {
      await queue.addBulk(
        Array.from({ length: Math.min(1000, options.total - i) }, (_, j) => ({
          name: 'delivery',
          data: { deliveryId: randomUUID(), eventId: `Event-${i + j}`, targetId: randomUUID(), programId: 'p', merchantId: null },
          opts: { jobId: `bare-${i + j}`, removeOnComplete: { age: 3600 }, attempts: 1 },
        })),
      );
    }
    for (let i = 0; i < options.processes; i += 1) {
      const worker = startService('bench/bare-worker.ts', {
        REDIS_URL,
        BENCH_TARGET_URL: options.url,
        BENCH_PREFIX: options.prefix,
        BENCH_QUEUE: 'bare',
        BENCH_CONCURRENCY: String(options.concurrency),
      });
      workers.push(worker);
      cleanups.push(async () => void (await worker.stop('SIGTERM', 15_000)));
    }
    return await options.drain(options.total, workers, 'bare BullMQ worker');
  } finally {
    for (const worker of workers) await worker.stop('SIGTERM', 15_000);
    await queue.obliterate({ force: true });
    await queue.close();
  }
}

/** The ceilings' figures, for the delivery rows after them. */
export interface DeliveryCeilings {
  /** The raw POST loop's rows (the others come with the rows they are set against). */
  rows: Row[];
  raw16: number;
  raw32: number;
  bareTwo: DrainResult;
  durableTwo: DrainResult;
}

export async function deliveryCeilings(bench: Bench): Promise<DeliveryCeilings> {
  const { receiverUrl, reset, drain } = bench;
  await reset();
  // Warm-up (JIT, connection pools) so that the first ceiling is not measured cold.
  await rawPostLoop(`${receiverUrl}/hook/raw`, 2 * WORKER_CONCURRENCY, 2_000);
  const raw16 = await rawPostLoop(`${receiverUrl}/hook/raw`, WORKER_CONCURRENCY, SIZE.rawPosts);
  const raw32 = await rawPostLoop(`${receiverUrl}/hook/raw`, 2 * WORKER_CONCURRENCY, SIZE.rawPosts);
  const rows: Row[] = [
    { scenario: `ceiling: raw POST loop, ${WORKER_CONCURRENCY} in flight`, figure: round(raw16, 0), unit: 'req/s' },
    { scenario: `ceiling: raw POST loop, ${2 * WORKER_CONCURRENCY} in flight`, figure: round(raw32, 0), unit: 'req/s' },
  ];
  await reset();
  const bareTwo = await bareBullmq({
    url: `${receiverUrl}/hook/bare`,
    concurrency: WORKER_CONCURRENCY,
    total: SIZE.bareJobs,
    prefix: bench.barePrefix,
    processes: 2,
    drain,
  });
  // The durable delivery ceiling (bench/ceilings.ts) in 2 processes: the same, plus each attempt recorded in PostgreSQL.
  await reset();
  const durableTwo = await durableDeliveryCeiling({
    databaseUrl: bench.databaseUrl,
    redisUrl: REDIS_URL,
    url: `${receiverUrl}/hook/durable`,
    prefix: bench.barePrefix,
    concurrency: WORKER_CONCURRENCY,
    total: SIZE.bareJobs,
    processes: 2,
    programId: 'bench-p',
    merchantId: 'bench-m',
    drain,
    startProcess,
  });
  return { rows, raw16, raw32, bareTwo, durableTwo };
}
