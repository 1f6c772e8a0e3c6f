/** Isolation: hanging, slow and bursting merchants beside a healthy one (bench/isolation.ts), with one delivery-worker on the default settings. */
import { runIsolation } from '../isolation';
import { ADMIN_TOKEN, INGEST_TOKEN, QUICK, REDIS_URL } from '../settings';
import { serviceEnv, startService } from '../setup';
import { cleanups, log, serviceLogs, type Bench, type Row } from './harness';

export async function isolation(bench: Bench): Promise<Row[]> {
  const rows: Row[] = [];
  await runIsolation({
    quick: QUICK,
    apiUrl: bench.apiUrl,
    receiverUrl: bench.receiverUrl,
    adminToken: ADMIN_TOKEN,
    ingestToken: INGEST_TOKEN,
    prisma: bench.prisma,
    // Not WORKER_CONCURRENCY: the default settings.
    startWorker: () => {
      const worker = startService(
        'services/delivery-worker/src/main.ts',
        serviceEnv({ databaseUrl: bench.databaseUrl, redisUrl: REDIS_URL, queuePrefix: bench.queuePrefix }),
      );
      cleanups.push(async () => void (await worker.stop('SIGTERM', 15_000)));
      serviceLogs.push(['delivery-worker (isolation)', worker]);
      return worker;
    },
    addRow: (row) => rows.push(row),
    log,
  });
  return rows;
}
