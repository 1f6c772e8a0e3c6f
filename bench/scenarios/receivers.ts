/**
 * Receivers that push back (issue 48), with one delivery-worker on the default settings: a merchant
 * that takes 50 callbacks a second and answers 429 with `Retry-After: 1` beyond. Its callbacks are
 * queued first, then drained: the goodput (callbacks delivered per second, from its first 200 to
 * its last), the share of requests refused, and how many failed for good.
 */
import { randomUUID } from 'node:crypto';
import { callJson, lastRead, waitFor } from '@herald/testing';
import { ingestBatches } from '../ingest-load';
import { ADMIN_TOKEN, INGEST_TOKEN, QUICK, REDIS_URL } from '../settings';
import { serviceEnv, startService } from '../setup';
import { cleanups, log, round, serviceLogs, type Bench, type Row } from './harness';

const PER_SECOND = 50;
const CALLBACKS = QUICK ? 600 : 3_000;
/** Longest the drain may take: the callbacks at the receiver's rate, three times over. */
const DRAIN_MS = (3 * CALLBACKS * 1_000) / PER_SECOND;

export async function receivers(bench: Bench): Promise<Row[]> {
  const programId = `bench-rcv-${randomUUID().slice(0, 8)}`;
  const admin = (method: string, path: string, body?: unknown): Promise<unknown> =>
    callJson(method, `${bench.apiUrl}/admin${path}`, { token: ADMIN_TOKEN, body });
  await admin('POST', '/programs', { id: programId, name: 'rate-limited receiver' });
  await admin('PUT', `/programs/${programId}/notification-target`, { url: `${bench.receiverUrl}/limited/${PER_SECOND}/hook`, auth: { mode: 'none' } });
  await bench.reset();
  await ingestBatches({
    apiUrl: bench.apiUrl,
    token: INGEST_TOKEN,
    count: CALLBACKS,
    batchSize: 500,
    inFlight: 2,
    programId,
    objectType: 'payment',
    idPrefix: `${randomUUID().slice(0, 8)}-`,
  });
  const worker = startService(
    'services/delivery-worker/src/main.ts',
    serviceEnv({ databaseUrl: bench.databaseUrl, redisUrl: REDIS_URL, queuePrefix: bench.queuePrefix }),
  );
  cleanups.push(async () => void (await worker.stop('SIGTERM', 15_000)));
  serviceLogs.push(['delivery-worker (receivers)', worker]);
  try {
    const stats = await waitFor(bench.stats, (s) => (s.limited?.delivered ?? 0) >= CALLBACKS, DRAIN_MS, 'the rate-limited receiver’s callbacks', 250).catch(
      lastRead<Awaited<ReturnType<Bench['stats']>>>,
    );
    const limited = stats.limited ?? { delivered: 0, refused: 0, firstAt: 0, lastAt: 0 };
    const seconds = Math.max(0.001, (limited.lastAt - limited.firstAt) / 1000);
    const goodput = limited.delivered / seconds;
    const failed = Number(
      (
        await bench.prisma.$queryRaw<Array<{ n: bigint }>>`
          SELECT count(*) AS n FROM deliveries d JOIN notification_targets t ON t.id = d.target_id
          WHERE t.program_id = ${programId} AND d.status = 'failed'`
      )[0]!.n,
    );
    const refusedShare = limited.refused / Math.max(1, limited.delivered + limited.refused);
    log(`receivers: ${Math.round(goodput)} callbacks/s delivered, ${Math.round(refusedShare * 100)} % of requests refused with 429, ${failed} failed`);
    return [
      {
        scenario: `receivers: ${CALLBACKS} callbacks to a receiver taking ${PER_SECOND}/s (429 with Retry-After: 1 beyond): goodput`,
        figure: round(goodput, 1),
        unit: 'callbacks/s',
        target: '>= 45/s, 429s <= 5 % of requests, none failed',
        note: `${limited.delivered} of ${CALLBACKS} delivered in ${seconds.toFixed(1)} s; ${limited.refused} requests refused with 429 (${round(refusedShare * 100, 1)} %); ${failed} failed for good`,
      },
    ];
  } finally {
    await worker.stop('SIGTERM', 20_000);
  }
}
