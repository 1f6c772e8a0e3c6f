/**
 * The delivery ceiling of the bench, in its own process like a delivery-worker: a bare BullMQ
 * worker (no database) whose processor does one raw POST to BENCH_TARGET_URL, on the queue
 * BENCH_QUEUE under BENCH_PREFIX, BENCH_CONCURRENCY jobs at once. Logs `{"message":"ready"}`.
 */
import { Worker } from 'bullmq';
import { createRawPoster } from './raw-post';

const poster = createRawPoster();
const url = process.env.BENCH_TARGET_URL ?? '';
const redisUrl = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const worker = new Worker(process.env.BENCH_QUEUE ?? 'bare', () => poster.post(url), {
  connection: { host: redisUrl.hostname, port: Number(redisUrl.port || 6379), db: Number(redisUrl.pathname.slice(1) || 0), maxRetriesPerRequest: null },
  prefix: process.env.BENCH_PREFIX ?? 'bench',
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 16),
});
void worker.waitUntilReady().then(() => process.stdout.write(`${JSON.stringify({ message: 'ready', pid: process.pid })}\n`));
process.on('SIGTERM', () => {
  void worker.close().then(() => {
    poster.close();
    process.exit(0);
  });
});
