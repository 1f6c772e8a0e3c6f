/** The soak (bench/soak.ts): steady delivery with retries for SOAK.seconds, one delivery-worker on the default settings. */
import { runSoak } from '../soak';
import { ADMIN_TOKEN, INGEST_TOKEN, REDIS_URL, SOAK } from '../settings';
import { serviceEnv } from '../setup';
import { log, serviceLogs, startProcess, type Bench, type Row } from './harness';

export async function soak(bench: Bench): Promise<Row[]> {
  const rows: Row[] = [];
  const { databaseUrl, queuePrefix } = bench;
  await runSoak({
    apiUrl: bench.apiUrl,
    receiverUrl: bench.receiverUrl,
    adminToken: ADMIN_TOKEN,
    ingestToken: INGEST_TOKEN,
    redisUrl: REDIS_URL,
    queuePrefix,
    databaseUrl,
    seconds: SOAK.seconds,
    rate: SOAK.rate,
    failEvery: 20,
    startWorker: () => {
      const worker = startProcess('services/delivery-worker/src/main.ts', serviceEnv({ databaseUrl, redisUrl: REDIS_URL, queuePrefix }));
      serviceLogs.push(['delivery-worker (soak)', worker]);
      return worker;
    },
    addRow: (row) => rows.push(row),
    log,
  });
  return rows;
}
