/**
 * The durable delivery ceiling of the bench, in its own process like a delivery-worker: a bare
 * BullMQ worker whose processor does one raw POST to BENCH_TARGET_URL and then records it the
 * minimal durable way, in the same tables as Herald: the delivery's attempt row inserted and its
 * deliveries row updated (succeeded, attempts_made + 1), in one statement per batch (the attempt
 * in its delivery's week partition; the ids also an index condition on every partition, and the
 * batch's range of created_at, from the jobs, as in Herald's statement). The jobs of a
 * batch are gathered with Herald's own coalescer and options (as many as the worker's concurrency,
 * two statements in flight, a record waiting up to 1 ms for the others' while other jobs run),
 * so Herald's ratio to this is its own overhead, not the cost of recording attempts. Queue
 * BENCH_QUEUE under BENCH_PREFIX, BENCH_CONCURRENCY jobs at once, on DATABASE_URL. Logs
 * `{"message":"ready"}`.
 */
import { Worker } from 'bullmq';
import pg from 'pg';
import { createCoalescer } from '@herald/queue';
import { createRawPoster } from './raw-post';

/** At most this many recording statements in flight: the delivery-worker's STATEMENTS_IN_FLIGHT. */
const STATEMENTS_IN_FLIGHT = 2;
/** The delivery-worker's RECORD_LINGER_MS, while other jobs run. */
const RECORD_LINGER_MS = 1;
/** Jobs in the processor now. */
let running = 0;

/**
 * One batch of attempts: the deliveries' new state, and an attempt row numbered from it (the
 * shape of Herald's record statement without its rules: every attempt here succeeded).
 */
const RECORD_SQL = `
WITH input AS (
  SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::int[], $4::int[], $5::text[]) AS i(delivery_id, started_at, duration_ms, status_code, url)
), updated AS (
  UPDATE deliveries AS d
  SET attempts_made = d.attempts_made + 1, status = 'succeeded', last_status_code = i.status_code, completed_at = now(), updated_at = now()
  FROM input AS i
  WHERE d.id = i.delivery_id AND d.id = ANY($1::uuid[]) AND d.created_at BETWEEN $6::timestamptz AND $7::timestamptz
  RETURNING d.id, d.created_at, d.attempts_made
)
INSERT INTO delivery_attempts (delivery_id, delivery_created_at, number, started_at, duration_ms, status_code, url)
SELECT u.id, u.created_at, u.attempts_made, i.started_at, i.duration_ms, i.status_code, i.url
FROM updated AS u JOIN input AS i ON i.delivery_id = u.id`;

interface Attempt {
  deliveryId: string;
  /** The delivery's created_at, from its job. */
  storedAt: string;
  startedAt: Date;
  durationMs: number;
  statusCode: number;
}

const poster = createRawPoster();
const url = process.env.BENCH_TARGET_URL ?? '';
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 16);
const redisUrl = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: STATEMENTS_IN_FLIGHT });

const record = createCoalescer(
  async (attempts: Attempt[]) => {
    // Sorted, as Herald does, so that concurrent batches lock rows in the same order.
    const sorted = [...attempts].sort((a, b) => (a.deliveryId < b.deliveryId ? -1 : a.deliveryId > b.deliveryId ? 1 : 0));
    const stored = attempts.map((a) => a.storedAt).sort();
    const { rowCount } = await pool.query({
      name: 'bench-durable-record',
      text: RECORD_SQL,
      values: [
        sorted.map((a) => a.deliveryId),
        sorted.map((a) => a.startedAt),
        sorted.map((a) => a.durationMs),
        sorted.map((a) => a.statusCode),
        sorted.map(() => url),
        stored[0],
        stored.at(-1),
      ],
    });
    if (rowCount !== attempts.length) throw new Error(`recorded ${rowCount} of ${attempts.length} attempts`);
    return attempts.map(() => undefined);
  },
  { maxBatch: concurrency, maxInFlight: STATEMENTS_IN_FLIGHT, lingerMs: () => (running > 1 ? RECORD_LINGER_MS : 0) },
);

const worker = new Worker<{ deliveryId: string; storedAt: string }>(
  process.env.BENCH_QUEUE ?? 'bare-durable',
  async (job) => {
    running += 1;
    try {
      const startedAt = new Date();
      const started = performance.now();
      await poster.post(url);
      await record({
        deliveryId: job.data.deliveryId,
        storedAt: job.data.storedAt,
        startedAt,
        durationMs: Math.round(performance.now() - started),
        statusCode: 200,
      });
    } finally {
      running -= 1;
    }
  },
  {
    connection: { host: redisUrl.hostname, port: Number(redisUrl.port || 6379), db: Number(redisUrl.pathname.slice(1) || 0), maxRetriesPerRequest: null },
    prefix: process.env.BENCH_PREFIX ?? 'bench',
    concurrency,
  },
);
void worker.waitUntilReady().then(() => process.stdout.write(`${JSON.stringify({ message: 'ready', pid: process.pid })}\n`));
process.on('SIGTERM', () => {
  void worker.close().then(async () => {
    poster.close();
    await pool.end();
    process.exit(0);
  });
});
