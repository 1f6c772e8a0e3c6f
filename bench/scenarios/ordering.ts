/**
 * Ordered delivery (issue 46), with one delivery-worker on the default settings:
 *   - throughput: the same callbacks (each object's events interleaved with the others', as they
 *     come from many customers at once) drained to a target with ordering `object`, beside the same
 *     drain to a target with ordering `none` in the same run, rounds alternating;
 *   - head-of-line: one object's callbacks to an ordered target fail for a while (its first answered
 *     500, its later ones waiting behind it) while other objects' events keep coming to the same
 *     target: their latency from ingest to arrival, beside the same latency with nothing stuck.
 */
import { randomUUID } from 'node:crypto';
import { callJson, lastRead, waitFor, type ServiceProcess } from '@herald/testing';
import { ingestBatches } from '../ingest-load';
import { ADMIN_TOKEN, INGEST_TOKEN, QUICK, REDIS_URL } from '../settings';
import { serviceEnv, startService } from '../setup';
import { cleanups, log, percentile, round, serviceLogs, type Bench, type Row } from './harness';

const SIZE = QUICK
  ? { callbacks: 2_000, objects: 200, rounds: 1, stuckMs: 20_000, healthy: 20 }
  : { callbacks: 20_000, objects: 2_000, rounds: 2, stuckMs: 60_000, healthy: 20 };
/** The stuck object's events: its first fails while stuck, the others wait behind it. */
const STUCK_EVENTS = 10;

type Ordering = 'none' | 'object';

export async function ordering(bench: Bench): Promise<Row[]> {
  const admin = (method: string, path: string, body?: unknown): Promise<unknown> =>
    callJson(method, `${bench.apiUrl}/admin${path}`, { token: ADMIN_TOKEN, body });
  /** A program whose target (its only one) is `path` on the receiver, with `ordering`. */
  const program = async (name: string, path: string, order: Ordering): Promise<string> => {
    const programId = `bench-ord-${name}`;
    await admin('POST', '/programs', { id: programId, name });
    await admin('PUT', `/programs/${programId}/notification-target`, { url: `${bench.receiverUrl}${path}`, auth: { mode: 'none' }, ordering: order });
    return programId;
  };
  const startWorker = (): ServiceProcess => {
    const worker = startService(
      'services/delivery-worker/src/main.ts',
      serviceEnv({ databaseUrl: bench.databaseUrl, redisUrl: REDIS_URL, queuePrefix: bench.queuePrefix }),
    );
    cleanups.push(async () => void (await worker.stop('SIGTERM', 15_000)));
    serviceLogs.push(['delivery-worker (ordering)', worker]);
    return worker;
  };

  const targets: Record<Ordering, string> = {
    none: await program('any-order', '/hook/ord-none', 'none'),
    object: await program('in-order', '/hook/ord-object', 'object'),
  };
  const rates: Record<Ordering, number[]> = { none: [], object: [] };
  for (let round_ = 0; round_ < SIZE.rounds; round_ += 1) {
    for (const order of ['none', 'object'] as const) {
      // Queued first, drained by a worker started after: the drain alone is timed.
      await bench.reset();
      await ingestBatches({
        apiUrl: bench.apiUrl,
        token: INGEST_TOKEN,
        count: SIZE.callbacks,
        batchSize: 500,
        inFlight: 2,
        programId: targets[order],
        objectType: 'payment',
        idPrefix: `${randomUUID().slice(0, 8)}-`,
        objects: SIZE.objects,
      });
      const worker = startWorker();
      try {
        rates[order].push((await bench.drain(SIZE.callbacks, [worker], `ordering ${order}`)).rate);
      } finally {
        await worker.stop('SIGTERM', 20_000);
      }
    }
  }
  const best = (order: Ordering): number => Math.max(...rates[order]);
  const parked = Number(
    (
      await bench.prisma.$queryRaw<Array<{ n: bigint }>>`
        SELECT count(*) AS n FROM deliveries d JOIN notification_targets t ON t.id = d.target_id
        WHERE t.program_id = ${targets.object} AND d.last_deferral_reason = 'awaiting_predecessor'`
    )[0]!.n,
  );
  const rows: Row[] = [
    {
      scenario: `ordering: ${SIZE.callbacks} callbacks over ${SIZE.objects} objects (events interleaved) to one target with ordering object`,
      figure: round(best('object'), 0),
      unit: 'callbacks/s',
      ceiling: round(best('none'), 0),
      ceilingName: 'the same drain to a target with ordering none',
      target: '>= 0.9',
      note: `best of ${SIZE.rounds} alternating rounds each (object ${rates.object.map((r) => Math.round(r)).join(', ')}; none ${rates.none.map((r) => Math.round(r)).join(', ')}); ${parked} callbacks waited for their predecessor`,
    },
  ];

  rows.push(await headOfLine(bench, await program('stuck', '/stuck/ord', 'object'), startWorker));
  return rows;
}

/** One object stuck for SIZE.stuckMs beside other objects of the same ordered target. */
async function headOfLine(bench: Bench, programId: string, startWorker: () => ServiceProcess): Promise<Row> {
  const post = (objectId: string): Promise<unknown> =>
    callJson('POST', `${bench.apiUrl}/internal/events`, {
      token: INGEST_TOKEN,
      body: { id: `Event-${randomUUID()}`, programId, origin: 'api', eventType: 'updated', objectId, objectType: 'payment' },
    });
  /** Ingests SIZE.healthy events, each of its own object, and returns their latencies from ingest to arrival, sorted. */
  const healthyLatencies = async (tag: string): Promise<number[]> => {
    const sentAt = new Map<string, number>();
    await Promise.all(
      Array.from({ length: SIZE.healthy }, async (_, i) => {
        const id = `Event-${randomUUID()}`;
        sentAt.set(id, Date.now());
        await callJson('POST', `${bench.apiUrl}/internal/events`, {
          token: INGEST_TOKEN,
          body: { id, programId, origin: 'api', eventType: 'created', objectId: `${tag}-${i}`, objectType: 'payment' },
        });
      }),
    );
    const read = async (): Promise<Record<string, number>> => (await callJson('GET', `${bench.receiverUrl}/arrivals`)) as Record<string, number>;
    const arrivals = await waitFor(read, (a) => [...sentAt.keys()].every((id) => a[id] !== undefined), 30_000, 'the other objects’ callbacks', 100).catch(
      lastRead<Record<string, number>>,
    );
    return [...sentAt]
      .map(([id, at]) => (arrivals[id] ?? Number.NaN) - at)
      .filter(Number.isFinite)
      .sort((a, b) => a - b);
  };

  await bench.reset();
  const worker = startWorker();
  try {
    await worker.waitForLog('delivery-worker ready', 30_000);
    const calm = await healthyLatencies('calm');
    await callJson('POST', `${bench.receiverUrl}/stuck-control/on`);
    const stuckFrom = Date.now();
    for (let i = 0; i < STUCK_EVENTS; i += 1) await post('stuck-0');
    await waitFor(bench.stats, (s) => (s.stuck?.refused ?? 0) > 0, 30_000, 'the stuck object’s first refusal', 100);
    const during = await healthyLatencies('during');
    await waitFor(
      async () => Date.now(),
      (now) => now - stuckFrom >= SIZE.stuckMs,
      SIZE.stuckMs + 5_000,
      'the stuck period',
      500,
    );
    await callJson('POST', `${bench.receiverUrl}/stuck-control/off`);
    const refused = (await bench.stats()).stuck?.refused ?? 0;
    const p99 = (sorted: number[]): number => (sorted.length === SIZE.healthy ? percentile(sorted, 99) : Number.POSITIVE_INFINITY);
    log(`ordering head-of-line: other objects' p99 ${p99(during)} ms with one stuck, ${p99(calm)} ms without`);
    return {
      scenario: `ordering: one object's callbacks failing for ${SIZE.stuckMs / 1000} s on an ordered target, ${SIZE.healthy} events of other objects meanwhile: ingest -> arrival`,
      figure: p99(during),
      unit: 'ms p99',
      target: '<= the same without a stuck object + 1000 ms (the isolation scenarios’ healthy bound)',
      note: `without a stuck object: p99 ${p99(calm)} ms; ${during.length} of ${SIZE.healthy} arrived (calm ${calm.length}); the stuck object's first callback was refused ${refused} times while its ${STUCK_EVENTS - 1} later ones waited`,
    };
  } finally {
    await callJson('POST', `${bench.receiverUrl}/stuck-control/off`).catch(() => undefined);
    await worker.stop('SIGTERM', 20_000);
  }
}
