/**
 * The worker's statements on a database in use for a while, with and without the jobs' stored range:
 *
 *   node --import tsx bench/partition-reads.ts [--months 24] [--weeks 6] [--batches 1000]
 *
 * Creates a scratch database holding `months` past months of events and `weeks` past weeks of
 * deliveries (20,000 rows each, as a deployment keeping events for ever and deliveries for 30 days
 * has them), stores fresh events with one delivery each through the ingest's own transaction, then
 * runs the worker's load and record of batches of 16 deliveries on a pool planned like the
 * worker's (generic plans): alternately with the batch's stored range (storedAt, as the jobs carry
 * it) and without (every partition, as for a job queued without it). Prints the time per batch of
 * each and their ratio, then drops the database.
 */
import { performance } from 'node:perf_hooks';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  applyMigrations,
  closeDatabasePool,
  createCredentialsCipher,
  createEventMonthsAhead,
  createDatabasePool,
  deliveryAttemptRepository,
  ingestStore,
  partitionMaintenance,
  storedRange,
  targetRepository,
  tenantRepository,
  type DeliveryAttemptRepository,
  type NewEvent,
} from '@herald/db';
import { createScratchDatabase } from '@herald/testing';

const DAY_MS = 86_400_000;
const BATCH = 16;
const ROWS_PER_PARTITION = 20_000;
const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};

async function main(): Promise<void> {
  const months = arg('months', 24);
  const weeks = arg('weeks', 6);
  const batches = arg('batches', 1000);
  const scratch = await createScratchDatabase('herald_bench_partitions');
  const pool = createDatabasePool(scratch.url, { genericPlans: true });
  try {
    await applyMigrations(scratch.url);
    const programId = 'bench-parts';
    const cipher = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: randomBytes(32) } });
    await tenantRepository(pool).createProgram({ id: programId, name: 'Program' });
    const target = await targetRepository(pool, cipher).upsert(
      { kind: 'program', programId },
      { url: 'http://127.0.0.1:9/hooks', auth: { mode: 'none' }, notifications: {}, enabled: true },
    );

    // The past: its partitions, as the maintenance passes of those days created them, then rows in them.
    const client = await pool.connect();
    try {
      await createEventMonthsAhead(client, { now: new Date(Date.now() - months * 30.5 * DAY_MS), monthsAhead: months, lockTimeoutMs: 2_000 });
    } finally {
      client.release();
    }
    await partitionMaintenance(pool).maintain({ now: new Date(Date.now() - weeks * 7 * DAY_MS), deliveryRetentionDays: 0, weeksAhead: weeks });
    await pool.query(
      // All of one object 'o', numbered in order of month and row.
      `INSERT INTO events (id, program_id, created_at, origin, event_type, object_id, object_type, sequence, content_hash, ingested_at)
       SELECT 'Event-old-' || m || '-' || i, $1, now(), 'api', 'created', 'o', 'payment', ($2::int - m) * $3::int + i, 'h', date_trunc('month', now()) - make_interval(months => m) + interval '1 day'
       FROM generate_series(1, $2::int) AS m, generate_series(1, $3::int) AS i`,
      [programId, months, ROWS_PER_PARTITION],
    );
    await pool.query(
      `INSERT INTO deliveries (id, event_id, target_id, updated_at, created_at)
       SELECT gen_random_uuid(), 'Event-old-' || w || '-' || i, $1, now(), now() - make_interval(days => 7 * w)
       FROM generate_series(1, $2::int) AS w, generate_series(1, $3::int) AS i`,
      [target.id, weeks, ROWS_PER_PARTITION],
    );

    // The present: events and their deliveries stored as the ingest stores them.
    const jobs: Array<{ deliveryId: string; storedAt: Date }> = [];
    for (let stored = 0; stored < batches * BATCH; stored += 500) {
      const batch: NewEvent[] = Array.from({ length: 500 }, () => ({
        event: {
          id: `Event-${randomUUID()}`,
          createdAt: new Date().toISOString(),
          origin: 'api',
          eventType: 'created',
          objectId: 'o-1',
          objectType: 'payment',
        },
        programId,
        contentHash: 'h',
      }));
      await ingestStore(pool).transaction(async (tx) => {
        const { storedAt } = await tx.insertNewEvents(batch);
        const refs = batch.map((item) => ({
          deliveryId: randomUUID(),
          eventId: item.event.id,
          targetId: target.id,
          programId,
          merchantId: null,
          targetOwner: 'program' as const,
          storedAt: storedAt.toISOString(),
        }));
        tx.writeAtCommit({ deliveries: refs, counted: [] });
        jobs.push(...refs.map((ref) => ({ deliveryId: ref.deliveryId, storedAt })));
      });
    }
    await pool.query('VACUUM ANALYZE');

    const repository = deliveryAttemptRepository(pool, cipher);
    const timed = { ranged: 0, everywhere: 0 };
    for (let i = 0; i < batches; i += 1) {
      const batch = jobs.slice(i * BATCH, (i + 1) * BATCH);
      // Alternated batch by batch, so that both meet the same machine; the first 50 of each warm up.
      const ranged = i % 2 === 0;
      const started = performance.now();
      await loadAndRecord(repository, batch, ranged);
      if (i >= 100) timed[ranged ? 'ranged' : 'everywhere'] += performance.now() - started;
    }
    const perBatch = (ms: number) => (ms * 1000) / ((batches - 100) / 2);
    const { rows } = await pool.query<{ weeks: number; months: number }>(
      `SELECT (SELECT count(*)::int FROM pg_inherits WHERE inhparent = 'deliveries'::regclass) AS weeks,
              (SELECT count(*)::int FROM pg_inherits WHERE inhparent = 'events'::regclass) AS months`,
    );
    console.log(
      JSON.stringify({
        partitions: rows[0],
        batchSize: BATCH,
        microsecondsPerBatch: { withStoredRange: Math.round(perBatch(timed.ranged)), everyPartition: Math.round(perBatch(timed.everywhere)) },
        ratio: Number((timed.ranged / timed.everywhere).toFixed(3)),
      }),
    );
  } finally {
    await closeDatabasePool(pool);
    await scratch.drop();
  }
}

/** One batch as the worker runs it: the load, then the record of an attempt of each delivery. */
async function loadAndRecord(
  repository: DeliveryAttemptRepository,
  batch: ReadonlyArray<{ deliveryId: string; storedAt: Date }>,
  ranged: boolean,
): Promise<void> {
  const work = await repository.loadForAttempts(
    batch.map((job) => job.deliveryId),
    ranged ? storedRange(batch.map((job) => job.storedAt)) : undefined,
  );
  if (work.size !== batch.length) throw new Error(`loaded ${work.size} of ${batch.length} deliveries`);
  const recorded = await repository.recordAttempts(
    batch.map((job) => ({
      deliveryId: job.deliveryId,
      ...(ranged ? { storedAt: work.get(job.deliveryId)!.delivery.storedAt } : {}),
      attempt: { startedAt: new Date(), durationMs: 3, statusCode: 200, url: 'http://127.0.0.1:9/hooks' },
      outcome: 'succeeded' as const,
      changesTargetHealth: false,
    })),
  );
  if (recorded.some((r) => r === undefined)) throw new Error('an attempt was not recorded');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
