/**
 * The ingest load of the bench, and its ceiling: the same rows and jobs written the bare way.
 */
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { requestJson } from '@herald/testing';

export interface IngestLoad {
  count: number;
  batchSize: number;
  /** Requests (or bare batches) in flight at once. */
  inFlight: number;
  programId: string;
  /** Absent: program-wide events (fan-out to the program's target only). */
  merchantId?: string;
  /**
   * How many objects the events are of, taken in turn (the i-th event is of object i mod
   * `objects`): each object's events interleaved with the others'. Absent: one object per event.
   */
  objects?: number;
}

/**
 * The load the profiling tools (profile.ts, worker-rss.ts) ingest against `pnpm start`'s
 * development setup: the bench tenant's payment events, fan-out 2, in batches of 500, 2 in flight.
 */
export const DEV_PAYMENT_LOAD = {
  token: 'dev-ingest-token',
  batchSize: 500,
  inFlight: 2,
  programId: 'bench-p',
  merchantId: 'bench-m',
  objectType: 'payment',
} as const;

/** The bench's payment events: each fans out to the program's and the merchant's target. */
function paymentEvents(load: IngestLoad, objectType: string, idPrefix: string): Array<Array<Record<string, unknown>>> {
  const batches: Array<Array<Record<string, unknown>>> = [];
  for (let i = 0; i < load.count; i += load.batchSize) {
    batches.push(
      Array.from({ length: Math.min(load.batchSize, load.count - i) }, (_, j) => ({
        programId: load.programId,
        ...(load.merchantId ? { merchantId: load.merchantId } : {}),
        origin: 'api',
        eventType: 'created',
        objectId: `obj-${idPrefix}${load.objects === undefined ? i + j : (i + j) % load.objects}`,
        objectType,
        metadata: { bench: 'true' },
      })),
    );
  }
  return batches;
}

/** Runs `work` over the batches with `inFlight` of them at once; returns items per second. */
async function drive<T>(batches: T[][], inFlight: number, work: (batch: T[]) => Promise<void>): Promise<number> {
  const total = batches.reduce((n, b) => n + b.length, 0);
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < batches.length) await work(batches[next++]!);
    }),
  );
  return total / ((performance.now() - started) / 1000);
}

/** POST /internal/events in batches; returns events per second. Throws on any answer but 201. */
export async function ingestBatches(load: IngestLoad & { apiUrl: string; token: string; objectType: string; idPrefix?: string }): Promise<number> {
  return drive(paymentEvents(load, load.objectType, load.idPrefix ?? ''), load.inFlight, async (events) => {
    const res = await requestJson('POST', `${load.apiUrl}/internal/events`, { token: load.token, body: { events } });
    if (res.status !== 201) throw new Error(`POST /internal/events answered ${res.status}: ${res.body.slice(0, 500)}`);
  });
}

/**
 * The ingest ceiling: per batch, one transaction of two bare `INSERT ... SELECT FROM unnest(...)`
 * (the events with every column the ingest writes, and two deliveries per event), then one
 * `addBulk` of the same jobs (same ids, names, data and options shape) on its own queue. No HTTP,
 * no validation, no counters, no tenant or target lookups, no outbox marking after the enqueue:
 * what storing and queueing alone cost.
 * Events go to `programId`/`merchantId`, deliveries to their two targets (which must exist).
 * Once timed, its rows are deleted again: its deliveries have no job in Herald's queue, so they
 * would stay pending, and the workers' reconciler would requeue them (RECONCILER_STALE_AFTER_MS
 * later) into whatever section of the bench runs then.
 */
export async function bareIngest(load: IngestLoad & { merchantId: string; databaseUrl: string; redisUrl: string; queuePrefix: string }): Promise<number> {
  const pool = new pg.Pool({ connectionString: load.databaseUrl, max: load.inFlight });
  const redis = new Redis(load.redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue('bare-ingest', { connection: redis, prefix: load.queuePrefix });
  const written = { events: [] as string[], deliveries: [] as string[] };
  const runId = randomUUID().slice(0, 8);
  try {
    const targets = (
      await pool.query<{ id: string }>('SELECT id::text FROM notification_targets WHERE program_id = $1 ORDER BY merchant_id NULLS FIRST', [load.programId])
    ).rows.map((r) => r.id);
    if (targets.length !== 2) throw new Error(`bare ingest: expected 2 targets of ${load.programId}, found ${targets.length}`);
    const batches = paymentEvents(load, 'payment', `bare-${runId}-`);
    return await drive(batches, load.inFlight, async (events) => {
      const ids = events.map(() => `Event-${randomUUID()}`);
      const now = new Date().toISOString();
      const deliveryIds = ids.flatMap(() => [randomUUID(), randomUUID()]);
      written.events.push(...ids);
      written.deliveries.push(...deliveryIds);
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query(
          // Numbered as a store must number them: each object's row of object_sequences locked and
          // moved on in the same transaction (here each object has one event per batch).
          `WITH numbered AS (
             INSERT INTO object_sequences (program_id, merchant_id, object_type, object_id, last_sequence)
             SELECT program_id, coalesce(merchant_id, ''), object_type, object_id, 1 FROM unnest($2::text[], $3::text[], $8::text[], $7::text[])
               AS o(program_id, merchant_id, object_type, object_id) ORDER BY 1, 2, 3, 4
             ON CONFLICT (program_id, merchant_id, object_type, object_id) DO UPDATE SET last_sequence = object_sequences.last_sequence + 1
             RETURNING program_id, merchant_id, object_type, object_id, last_sequence)
           INSERT INTO events (id, program_id, merchant_id, created_at, origin, event_type, object_id, object_type, sequence, metadata, content_hash)
           SELECT e.id, e.program_id, e.merchant_id, e.created_at, e.origin, e.event_type, e.object_id, e.object_type, n.last_sequence, e.metadata, e.content_hash
           FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::text[], $8::text[], $9::jsonb[], $10::text[])
             AS e(id, program_id, merchant_id, created_at, origin, event_type, object_id, object_type, metadata, content_hash)
           JOIN numbered n ON n.program_id = e.program_id AND n.merchant_id = coalesce(e.merchant_id, '') AND n.object_type = e.object_type AND n.object_id = e.object_id`,
          [
            ids,
            events.map((e) => e.programId),
            events.map((e) => e.merchantId),
            events.map(() => now),
            events.map((e) => e.origin),
            events.map((e) => e.eventType),
            events.map((e) => e.objectId),
            events.map((e) => e.objectType),
            events.map((e) => JSON.stringify(e.metadata)),
            ids.map((id) => id.padEnd(64, '0').slice(0, 64)),
          ],
        );
        await client.query(
          // Marked enqueued at once, so that no delivery-worker's sweeper sends them (their jobs
          // go to a queue of their own that no worker reads).
          `INSERT INTO deliveries (id, event_id, target_id, updated_at, enqueued_at)
           SELECT id, event_id, target_id, now(), now() FROM unnest($1::uuid[], $2::text[], $3::uuid[]) AS d(id, event_id, target_id)`,
          [deliveryIds, ids.flatMap((id) => [id, id]), ids.flatMap(() => targets)],
        );
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      } finally {
        client.release();
      }
      await queue.addBulk(
        deliveryIds.map((deliveryId, i) => {
          const data = { deliveryId, eventId: ids[i >> 1]!, targetId: targets[i % 2]!, programId: load.programId, merchantId: load.merchantId, storedAt: now };
          return {
            name: `${data.eventId} -> ${i % 2 ? `merchant ${load.merchantId}` : `program ${load.programId}`}`,
            data,
            opts: { jobId: deliveryId, attempts: 22, backoff: { type: 'herald' }, removeOnComplete: { age: 86_400 }, removeOnFail: { age: 1_209_600 } },
          };
        }),
      );
    });
  } finally {
    await pool.query('DELETE FROM deliveries WHERE id = ANY($1::uuid[])', [written.deliveries]);
    await pool.query('DELETE FROM events WHERE id = ANY($1::text[])', [written.events]);
    await pool.query('DELETE FROM object_sequences WHERE program_id = $1 AND object_id LIKE $2', [load.programId, `obj-bare-${runId}-%`]);
    await queue.obliterate({ force: true });
    await queue.close();
    redis.disconnect();
    await pool.end();
  }
}
