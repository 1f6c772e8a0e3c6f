/** `--scale` (bench/scale.ts): GET /events at 1,000,000 and 10,000,000 events, and the per-row and per-request costs. */
import { applyMigrations, dropDatabase, ensureDatabase } from '@herald/db';
import { databaseUrlFor } from '@herald/testing';
import { runScale } from '../scale';
import { ADMIN_TOKEN, INGEST_TOKEN, REDIS_URL, SCALE_EVENTS } from '../settings';
import { serviceEnv } from '../setup';
import { cleanups, log, serviceLogs, startListening, startProcess, type Bench, type Row } from './harness';

export async function scale(bench: Bench): Promise<Row[]> {
  const rows: Row[] = [];
  const { cpu } = bench;
  await runScale({
    databaseUrl: bench.databaseUrl,
    apiUrl: bench.apiUrl,
    // The smaller table: a database of its own, with an events-api of its own on it. Its name
    // starts with the run's, so that CpuAccounts counts its PostgreSQL backends too.
    smallerTable: async () => {
      const url = databaseUrlFor(`herald_${bench.id}_small`);
      await ensureDatabase(url);
      cleanups.push(() => dropDatabase(url));
      await applyMigrations(url);
      const small = await startListening('services/events-api/src/server.ts', {
        ...serviceEnv({ databaseUrl: url, redisUrl: REDIS_URL, queuePrefix: bench.queuePrefix }),
        PORT: '0',
      });
      serviceLogs.push(['events-api (smaller table)', small.proc]);
      cpu.add(small.proc.child.pid, 'events-api');
      return { databaseUrl: url, apiUrl: `http://127.0.0.1:${small.port}` };
    },
    receiverUrl: bench.receiverUrl,
    adminToken: ADMIN_TOKEN,
    ingestToken: INGEST_TOKEN,
    cpu,
    startWorker: () => {
      const worker = startProcess('services/delivery-worker/src/main.ts', bench.env);
      serviceLogs.push(['delivery-worker (scale)', worker]);
      return worker;
    },
    events: SCALE_EVENTS,
    ingestEvents: 20_000,
    listRounds: 3,
    listSeconds: 5,
    addRow: (row) => rows.push(row),
    log,
  });
  return rows;
}
