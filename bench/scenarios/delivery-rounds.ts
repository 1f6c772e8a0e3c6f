/**
 * Ingest and 1 delivery-worker beside their ceilings in alternated rounds (bench/paired-rounds.ts),
 * then the 2-process ceilings against the 1-process ones, and the 1-worker rate against the raw
 * POST loop. `--only ceilings` runs the paired rounds alone (ceilingsOnly).
 */
import { deliveryRoundRows, deliveryRounds, median, runCeilingsSection, type CeilingsSectionContext } from '../paired-rounds';
import { durableRows } from '../ceilings';
import { formatCpu } from '../cpu';
import { ADMIN_TOKEN, INGEST_TOKEN, REDIS_URL, SIZE, WORKER_CONCURRENCY } from '../settings';
import { bareBullmq, type DeliveryCeilings } from './delivery-ceilings';
import { busyNote, deleteRedisKeys, log, peakRssMb, round, serviceLogs, startListening, startProcess, type Bench, type Row } from './harness';

/** Herald's figures with a ratio target, beside their ceilings in alternated rounds; its rows go to `addRow`. */
function pairedContext(bench: Bench, addRow: (row: Row) => void): CeilingsSectionContext {
  const { receiverUrl, drain } = bench;
  return {
    apiUrl: bench.apiUrl,
    receiverUrl,
    databaseUrl: bench.databaseUrl,
    redisUrl: REDIS_URL,
    barePrefix: bench.barePrefix,
    adminToken: ADMIN_TOKEN,
    ingestToken: INGEST_TOKEN,
    prisma: bench.prisma,
    concurrency: WORKER_CONCURRENCY,
    sizes: SIZE,
    rounds: SIZE.rounds,
    drain,
    resetReceiver: bench.reset,
    bareBullmq: () =>
      bareBullmq({ url: `${receiverUrl}/hook/bare`, concurrency: WORKER_CONCURRENCY, total: SIZE.bareJobs, prefix: bench.barePrefix, processes: 1, drain }),
    startHeraldWorker: () => {
      const worker = startProcess('services/delivery-worker/src/main.ts', bench.env);
      serviceLogs.push(['delivery-worker (paired rounds)', worker]);
      return worker;
    },
    startProcess,
    startListening,
    peakRssMb,
    addRow,
    log,
  };
}

/** `--only ceilings`: every figure with a ratio target beside its ceilings (bench/paired-rounds.ts). */
export async function ceilingsOnly(bench: Bench): Promise<Row[]> {
  const rows: Row[] = [];
  await runCeilingsSection(pairedContext(bench, (row) => rows.push(row)));
  return rows;
}

/** The rounds' figures the later delivery rows are set against. */
export interface DeliveryRoundsResult {
  rows: Row[];
  /** The median of the rounds' 1-worker rates. */
  oneWorkerRate: number;
  /** The highest peak RSS of the rounds' delivery-worker. */
  rssOne: number;
}

export async function deliveryVsCeilings(bench: Bench, ceilings: DeliveryCeilings): Promise<DeliveryRoundsResult> {
  const { raw16, bareTwo, durableTwo } = ceilings;
  const rounds = await deliveryRounds(
    pairedContext(bench, () => undefined),
    SIZE.rounds,
  );
  const rows: Row[] = [...deliveryRoundRows(rounds, { concurrency: WORKER_CONCURRENCY, ingestBatch: SIZE.ingestBatch })];
  await deleteRedisKeys(bench.barePrefix);
  const bare = median(rounds.map((r) => r.delivery.bare.rate));
  rows.push({
    scenario: `ceiling: 2 bare BullMQ worker processes + 1 POST, concurrency ${WORKER_CONCURRENCY} each`,
    figure: round(bareTwo.rate, 0),
    unit: 'jobs/s',
    ceiling: bare,
    ceilingName: '1 bare worker (median of the rounds)',
    note: busyNote(bareTwo),
    cpu: formatCpu(bareTwo.cpu),
  });
  rows.push(durableRows.ceiling(durableTwo, WORKER_CONCURRENCY, 2, bareTwo));
  // The 1-worker rate the rows below compare with: the median of the rounds' rates, as the bare
  // worker's above (the round with the median ratio to a ceiling may be a slow minute of the machine).
  const oneWorkerRate = median(rounds.map((r) => r.delivery.herald.rate));
  const rssOne = Math.max(...rounds.map((r) => r.heraldPeakRssMb));
  rows.push({
    scenario: '1 delivery-worker, callbacks/s vs raw POST loop (16)',
    figure: round(oneWorkerRate, 0),
    unit: 'callbacks/s',
    ceiling: raw16,
    ceilingName: 'raw POST loop 16',
  });
  return { rows, oneWorkerRate, rssOne };
}
