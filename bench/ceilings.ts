/**
 * The ceilings that separate Herald's own overhead from the database's (measured beside Herald in
 * bench/paired-rounds.ts):
 * - the durable delivery ceiling: bare BullMQ workers (bench/bare-durable-worker.ts) that per job
 *   do one POST and record it in the same tables the minimal durable way, batched like Herald;
 * - bare Express + the same SQL: Herald's GET /events page statement, built by the repository's
 *   own code, run by a bare handler (bench/bare-express-sql.ts).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { requestJson, type ServiceProcess } from '@herald/testing';
import { cpuAgainst, formatCpu, type CpuByRole } from './cpu';
import { eventListQueries, type EventListQuery } from '@herald/db';

/** What a drain of callbacks measured (bench/run.ts): the rate at the receiver, CPU per callback by process, the machine's busy share. */
export interface DrainResult {
  rate: number;
  seconds: number;
  /** CPU µs per callback by role; the drained processes are `role`. */
  cpu: CpuByRole;
  role: string;
  busy: number;
}

/**
 * Resolves when the receiver has `expected` callbacks, timed from the first (bench/run.ts).
 * `workers` (started, maybe not ready yet) are accounted as `role`; without a role, nothing is
 * measured or logged (callbacks that arrived while the caller was still posting events).
 */
export type Drain = (expected: number, workers: ServiceProcess[], role?: string) => Promise<DrainResult>;

/** A row of the bench's table (bench/run.ts). */
export interface CeilingRow {
  scenario: string;
  figure: number;
  unit: string;
  ceiling?: number;
  ceilingName?: string;
  target?: string;
  note?: string;
  cpu?: string;
}

export interface DurableCeilingOptions {
  databaseUrl: string;
  redisUrl: string;
  /** Where the workers POST (the bench receiver). */
  url: string;
  /** Queue prefix of the ceiling's own queue (its keys are the caller's to delete). */
  prefix: string;
  /** Jobs one worker process runs at once (Herald's WORKER_CONCURRENCY in the same run). */
  concurrency: number;
  /** Callbacks: one delivery each, two per event (fan-out 2, as Herald's drains). */
  total: number;
  processes: number;
  /**
   * Jobs with the priorities Herald's fair share gives two backlogged targets (the k-th job of
   * each target gets k): BullMQ then serves them from its prioritized set, as it serves Herald's.
   */
  prioritized?: boolean;
  /** A program and its merchant, each with a target: the deliveries go to those two targets. */
  programId: string;
  merchantId: string;
  drain: Drain;
  /** Starts a bench process (stopped by the caller's cleanup too). */
  startProcess: (script: string, env: Record<string, string>) => ServiceProcess;
}

/**
 * The durable delivery ceiling: seeds `total` deliveries (and their events) in the bench
 * database, queues one job per delivery, drains them with bare durable workers, checks one
 * attempt row per delivery and every delivery succeeded, then deletes those rows again (so the
 * tables stay as Herald's scenarios expect them, and the sweeper and reconciler never see them).
 */
export async function durableDeliveryCeiling(options: DurableCeilingOptions): Promise<DrainResult> {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 1 });
  const redis = new Redis(options.redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue('bare-durable', { connection: redis, prefix: options.prefix });
  const workers: ServiceProcess[] = [];
  const run = randomUUID().slice(0, 8);
  const eventIds = Array.from({ length: Math.ceil(options.total / 2) }, (_, i) => `Event-durable-${run}-${i}`);
  const deliveryIds = eventIds.flatMap(() => [randomUUID(), randomUUID()]).slice(0, options.total);
  try {
    const targets = (
      await pool.query<{ id: string }>(
        'SELECT id::text FROM notification_targets WHERE program_id = $1 AND (merchant_id IS NULL OR merchant_id = $2) ORDER BY merchant_id NULLS FIRST',
        [options.programId, options.merchantId],
      )
    ).rows.map((r) => r.id);
    if (targets.length !== 2) throw new Error(`durable ceiling: expected 2 targets of ${options.programId}, found ${targets.length}`);
    await pool.query(
      // Each event the only one of its object (its id): sequence 1.
      `INSERT INTO events (id, program_id, merchant_id, created_at, origin, event_type, object_id, object_type, sequence, content_hash)
       SELECT id, $2, $3, now(), 'api', 'created', id, 'payment', 1, md5(id) FROM unnest($1::text[]) AS e(id)`,
      [eventIds, options.programId, options.merchantId],
    );
    // Marked enqueued, so that no delivery-worker's sweeper sends them. Their created_at goes in
    // the jobs, as Herald's ingest puts it in its own (storedAt).
    const { rows: stored } = await pool.query<{ created_at: Date }>(
      `INSERT INTO deliveries (id, event_id, target_id, updated_at, enqueued_at)
       SELECT id, event_id, target_id, now(), now() FROM unnest($1::uuid[], $2::text[], $3::uuid[]) AS d(id, event_id, target_id)
       RETURNING created_at`,
      [deliveryIds, deliveryIds.map((_, i) => eventIds[i >> 1]!), deliveryIds.map((_, i) => targets[i % 2]!)],
    );
    const storedAt = stored[0]!.created_at.toISOString();
    for (let i = 0; i < deliveryIds.length; i += 1000) {
      await queue.addBulk(
        deliveryIds.slice(i, i + 1000).map((deliveryId, j) => ({
          name: 'delivery',
          data: {
            deliveryId,
            eventId: eventIds[(i + j) >> 1]!,
            targetId: targets[(i + j) % 2]!,
            programId: options.programId,
            merchantId: options.merchantId,
            storedAt,
          },
          opts: { jobId: deliveryId, removeOnComplete: { age: 3600 }, attempts: 1, ...(options.prioritized ? { priority: ((i + j) >> 1) + 1 } : {}) },
        })),
      );
    }
    for (let i = 0; i < options.processes; i += 1) {
      workers.push(
        options.startProcess('bench/bare-durable-worker.ts', {
          REDIS_URL: options.redisUrl,
          DATABASE_URL: options.databaseUrl,
          BENCH_TARGET_URL: options.url,
          BENCH_PREFIX: options.prefix,
          BENCH_QUEUE: 'bare-durable',
          BENCH_CONCURRENCY: String(options.concurrency),
        }),
      );
    }
    const result = await options.drain(options.total, workers, 'bare durable worker');
    // Stopping waits for the jobs in flight, whose attempts are recorded after their POST.
    for (const worker of workers) await worker.stop('SIGTERM', 15_000);
    const { rows } = await pool.query<{ attempts: string; succeeded: string }>(
      `SELECT (SELECT count(*) FROM delivery_attempts WHERE delivery_id = ANY($1::uuid[])) AS attempts,
              (SELECT count(*) FROM deliveries WHERE id = ANY($1::uuid[]) AND status = 'succeeded' AND attempts_made = 1) AS succeeded`,
      [deliveryIds],
    );
    if (Number(rows[0]!.attempts) !== options.total || Number(rows[0]!.succeeded) !== options.total) {
      throw new Error(`durable ceiling: ${rows[0]!.attempts} attempt rows and ${rows[0]!.succeeded} succeeded deliveries of ${options.total}`);
    }
    return result;
  } finally {
    for (const worker of workers) await worker.stop('SIGTERM', 15_000);
    // Attempts first: since deliveries are partitioned, no foreign key cascades to them.
    await pool.query('DELETE FROM delivery_attempts WHERE delivery_id = ANY($1::uuid[])', [deliveryIds]);
    await pool.query('DELETE FROM deliveries WHERE id = ANY($1::uuid[])', [deliveryIds]);
    await pool.query('DELETE FROM events WHERE id = ANY($1::text[])', [eventIds]);
    await queue.obliterate({ force: true });
    await queue.close();
    redis.disconnect();
    await pool.end();
  }
}

/** The page GET /events?page=1&pageSize=20 asks for with a merchant key of `merchantId`. */
export function pageOneQuery(programId: string, merchantId: string): EventListQuery {
  return { scope: { kind: 'merchant', programId, merchantId }, page: 1, pageSize: 20 };
}

/**
 * Starts bench/bare-express-sql.ts on Herald's page statement for `query` (built by the events
 * repository's code: the text and parameters the events-api sends for it) and checks its answer
 * holds `expectCount` and 20 rows. Returns its /events URL.
 */
export async function startBareSqlPage(options: {
  databaseUrl: string;
  query: EventListQuery;
  expectCount: number;
  startListening: (script: string, env: Record<string, string>) => Promise<{ port: number }>;
}): Promise<string> {
  const compiled = eventListQueries.page(options.query, { skip: (options.query.page - 1) * options.query.pageSize }).compile();
  const queryFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'herald-bench-')), 'query.json');
  writeFileSync(queryFile, JSON.stringify({ text: compiled.sql, values: compiled.parameters }));
  const { port } = await options.startListening('bench/bare-express-sql.ts', {
    DATABASE_URL: options.databaseUrl,
    BENCH_QUERY_FILE: queryFile,
    BENCH_POOL_SIZE: '6',
  });
  const url = `http://127.0.0.1:${port}/events`;
  const res = await requestJson('GET', url);
  const body = JSON.parse(res.body) as { count: number; data: unknown[] };
  if (res.status !== 200 || body.count !== options.expectCount || body.data.length !== options.query.pageSize) {
    throw new Error(`bare Express + SQL answered ${res.status}: count ${body.count} (expected ${options.expectCount}), ${body.data?.length} rows`);
  }
  return url;
}

/** autocannon, 32 connections, as the bench's GET /events scenarios; throws on any error or non-2xx. */
export async function cannon(url: string, seconds: number, headers: Record<string, string> = {}): Promise<{ rps: number; p50: number; p99: number }> {
  const result = await autocannon({ url, connections: 32, duration: seconds, headers });
  if (result.errors > 0 || result.non2xx > 0 || result.timeouts > 0)
    throw new Error(`autocannon ${url}: ${result.errors} errors, ${result.non2xx} non-2xx, ${result.timeouts} timeouts`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

/** The rows the durable ceiling adds (its own, and Herald's ratio to it), in the bench's wording. */
export const durableRows = {
  ceiling: (r: DrainResult, concurrency: number, processes: number, bare: DrainResult): CeilingRow => ({
    scenario: `ceiling: ${processes === 1 ? 'bare BullMQ worker' : `${processes} bare BullMQ worker processes`} + 1 POST + attempt recorded (1 batched INSERT + UPDATE), concurrency ${concurrency}${processes === 1 ? '' : ' each'}`,
    figure: Math.round(r.rate),
    unit: 'jobs/s',
    ceiling: bare.rate,
    ceilingName: processes === 1 ? 'bare BullMQ + POST' : `${processes} bare BullMQ processes`,
    note: `machine ${Math.round(r.busy * 100)} % busy`,
    cpu: formatCpu(r.cpu),
  }),
  /** Herald against the durable ceiling, with where its CPU per callback differs (`rounds`: the note on the alternated rounds). */
  herald: (workers: number, herald: DrainResult, durable: DrainResult, rounds?: string): CeilingRow => ({
    scenario: `${workers === 1 ? '1 delivery-worker' : `${workers} delivery-workers`}, callbacks/s vs durable ceiling (${workers === 1 ? 'bare BullMQ' : `${workers} bare processes`} + POST + attempt recorded)`,
    figure: Math.round(herald.rate),
    unit: 'callbacks/s',
    ceiling: durable.rate,
    ceilingName: 'durable ceiling',
    target: workers === 1 ? '>= 0.85' : undefined,
    note: [rounds, `per callback: ${cpuAgainst(herald, durable)}`].filter(Boolean).join('; '),
  }),
  /** The durable ceiling with prioritized jobs, against the plain one of the same round. */
  prioritizedCeiling: (r: DrainResult, concurrency: number, plain: DrainResult): CeilingRow => ({
    scenario: `ceiling: bare BullMQ worker + 1 POST + attempt recorded, jobs prioritized as Herald's fair share does, concurrency ${concurrency}`,
    figure: Math.round(r.rate),
    unit: 'jobs/s',
    ceiling: plain.rate,
    ceilingName: 'durable ceiling',
    note: `machine ${Math.round(r.busy * 100)} % busy`,
    cpu: formatCpu(r.cpu),
  }),
  /** Herald against the durable ceiling with prioritized jobs: its overhead beyond BullMQ's prioritized set. */
  heraldVsPrioritized: (herald: DrainResult, prioritized: DrainResult): CeilingRow => ({
    scenario: '1 delivery-worker, callbacks/s vs durable ceiling with prioritized jobs',
    figure: Math.round(herald.rate),
    unit: 'callbacks/s',
    ceiling: prioritized.rate,
    ceilingName: 'prioritized durable ceiling',
  }),
};

/** The rows of the bare Express + SQL ceiling and Herald's page 1 against it. */
export const listSqlRows = {
  ceiling: (r: { rps: number; p50: number; p99: number }): CeilingRow => ({
    scenario: "ceiling: bare Express + Herald's page 1 SQL (pg, 6 connections, prepared), 32 connections",
    figure: Math.round(r.rps),
    unit: 'req/s',
    note: `p50 ${r.p50} ms, p99 ${r.p99} ms`,
  }),
  herald: (events: number, herald: { rps: number }, sql: { rps: number }): CeilingRow => ({
    scenario: `GET /events page 1, ${events} events, req/s vs bare Express + same SQL`,
    figure: Math.round(herald.rps),
    unit: 'req/s',
    ceiling: sql.rps,
    ceilingName: 'bare Express + same SQL',
    target: '>= 0.8',
  }),
};
