/**
 * Delivery with 2 worker processes: drains the callbacks of one more ingest, against 1 worker
 * (the rounds' median), the raw POST loop (32) and the 2-process ceilings. The workers stay up
 * for the OAuth and end-to-end scenarios; peakRssRow stops them.
 */
import type { ServiceProcess } from '@herald/testing';
import { durableRows } from '../ceilings';
import { formatCpu } from '../cpu';
import { ingestBatches } from '../ingest-load';
import { INGEST_TOKEN, SIZE } from '../settings';
import { startService } from '../setup';
import type { DeliveryCeilings } from './delivery-ceilings';
import type { DeliveryRoundsResult } from './delivery-rounds';
import { busyNote, cleanups, peakRssMb, round, serviceLogs, type Bench, type Row } from './harness';

/** POST /internal/events in batches of the run's size, 2 in flight. */
export function ingest(bench: Bench, count: number, programId: string, merchantId: string | undefined, objectType: string): Promise<number> {
  return ingestBatches({
    apiUrl: bench.apiUrl,
    token: INGEST_TOKEN,
    count,
    batchSize: SIZE.ingestBatch,
    inFlight: 2,
    programId,
    ...(merchantId ? { merchantId } : {}),
    objectType,
  });
}

function startWorkers(bench: Bench, n: number): ServiceProcess[] {
  const workers = Array.from({ length: n }, () => startService('services/delivery-worker/src/main.ts', bench.env));
  workers.forEach((w, i) => {
    cleanups.push(async () => void (await w.stop('SIGTERM', 15_000)));
    serviceLogs.push([`delivery-worker ${n}.${i + 1}`, w]);
  });
  return workers;
}

export interface TwoWorkers {
  rows: Row[];
  /** Still running: the OAuth and end-to-end scenarios deliver through them. */
  workers: ServiceProcess[];
  /** Their peak RSS after the drain. */
  rssTwo: number[];
}

export async function twoWorkers(bench: Bench, ceilings: DeliveryCeilings, rounds: DeliveryRoundsResult): Promise<TwoWorkers> {
  const { oneWorkerRate } = rounds;
  const expected = 2 * SIZE.ingestEvents;
  await ingest(bench, SIZE.ingestEvents, 'bench-p', 'bench-m', 'payment');
  await bench.reset();
  const workers = startWorkers(bench, 2);
  const two = await bench.drain(expected, workers, 'delivery-worker');
  const rssTwo = workers.map((w) => peakRssMb(w.child.pid));
  const rows: Row[] = [
    {
      scenario: '2 delivery-workers, callbacks/s vs 1 worker',
      figure: round(two.rate, 0),
      unit: 'callbacks/s',
      ceiling: oneWorkerRate,
      ceilingName: '1 worker (median of the rounds)',
      target: '>= 1.6',
      note: busyNote(two),
      cpu: formatCpu(two.cpu),
    },
    {
      scenario: '2 delivery-workers, callbacks/s vs raw POST loop (32)',
      figure: round(two.rate, 0),
      unit: 'callbacks/s',
      ceiling: ceilings.raw32,
      ceilingName: 'raw POST loop 32',
    },
    {
      scenario: '2 delivery-workers, callbacks/s vs 2 bare BullMQ worker processes + POST',
      figure: round(two.rate, 0),
      unit: 'callbacks/s',
      ceiling: ceilings.bareTwo.rate,
      ceilingName: '2 bare BullMQ processes',
    },
    durableRows.herald(2, two, ceilings.durableTwo),
  ];
  const attempts = Number((await bench.prisma.$queryRaw<Array<{ n: bigint }>>`SELECT count(*) AS n FROM delivery_attempts`)[0]!.n);
  if (attempts < (SIZE.rounds + 1) * expected) throw new Error(`expected ${(SIZE.rounds + 1) * expected} recorded attempts, found ${attempts}`);
  return { rows, workers, rssTwo };
}

/** Stops the 2 workers and answers the peak RSS of a delivery-worker under load, over every scenario they ran. */
export async function peakRssRow(two: TwoWorkers, rounds: DeliveryRoundsResult): Promise<Row> {
  const rssUnderLoad = Math.max(rounds.rssOne, ...two.rssTwo, ...two.workers.map((w) => peakRssMb(w.child.pid)));
  for (const w of two.workers) await w.stop('SIGTERM', 15_000);
  return { scenario: 'peak RSS of a delivery-worker under load (VmHWM)', figure: rssUnderLoad, unit: 'MB', target: '< 200 MB' };
}
