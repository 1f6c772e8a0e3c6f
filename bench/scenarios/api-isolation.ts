/** API isolation: one key's 32 expensive reads beside another tenant (bench/api-isolation.ts). */
import { runApiIsolation } from '../api-isolation';
import { ADMIN_TOKEN, INGEST_TOKEN, QUICK, REDIS_URL } from '../settings';
import { serviceEnv } from '../setup';
import { log, round, serviceLogs, startListening, type BenchBase, type Row } from './harness';

export async function apiIsolation(context: BenchBase): Promise<Row[]> {
  const rows: Row[] = [];
  const addRow = (row: Row): number => rows.push(row);
  // An events-api of its own, on the default settings but the rate limit (as every bench API).
  const api = await startListening('services/events-api/src/server.ts', {
    ...serviceEnv({ databaseUrl: context.databaseUrl, redisUrl: REDIS_URL, queuePrefix: context.queuePrefix }),
    PORT: '0',
  });
  serviceLogs.push(['events-api (isolation)', api.proc]);
  const noisyEvents = QUICK ? 100_000 : 1_000_000;
  const r = await runApiIsolation({
    apiUrl: `http://127.0.0.1:${api.port}`,
    adminToken: ADMIN_TOKEN,
    ingestToken: INGEST_TOKEN,
    prisma: context.prisma,
    noisyEvents,
    seconds: QUICK ? 8 : 20,
    log,
  });
  await api.proc.stop('SIGTERM', 15_000);
  const scenario = `API isolation, 1 key x 32 loops of GET /events?${r.noisy.query} over ${noisyEvents} events`;
  const statuses = (counts: Record<string, number>): string =>
    Object.entries(counts)
      .map(([status, n]) => `${n} x ${status}`)
      .join(', ');
  addRow({
    scenario: `${scenario}: another tenant's GET /events p99`,
    figure: r.quiet.p99,
    unit: 'ms',
    target: '<= 250 ms',
    note: `p50 ${r.quiet.p50} ms; alone p50 ${r.quietAlone.p50} ms, p99 ${r.quietAlone.p99} ms; ${r.quiet.requests} requests at 20/s`,
  });
  addRow({ scenario: `${scenario}: another tenant's 503s`, figure: r.quiet.statuses['503'] ?? 0, unit: '503s', target: '0', note: statuses(r.quiet.statuses) });
  addRow({
    scenario: `${scenario}: /readyz answers other than 200`,
    figure: r.readyz.polls - (r.readyz.statuses['200'] ?? 0),
    unit: 'polls',
    target: '0',
    note: `${r.readyz.polls} polls: ${statuses(r.readyz.statuses)}`,
  });
  addRow({
    scenario: `${scenario}: ingest p99 (single events, 5/s)`,
    figure: r.ingest.p99,
    unit: 'ms',
    note: `p50 ${r.ingest.p50} ms; ${statuses(r.ingest.statuses)}`,
  });
  addRow({
    scenario: `${scenario}: the noisy key's answers`,
    figure: round((r.noisy.statuses['200'] ?? 0) / r.noisy.seconds, 1),
    unit: '200s/s',
    note: statuses(r.noisy.statuses),
  });
  addRow({
    scenario: `API isolation: the issue's GET /events?createdFrom=1970-01-01T00:00:00Z&page=9999&pageSize=100 alone, ${noisyEvents} events`,
    figure: r.issueQuery.ms,
    unit: 'ms',
    note: `answered ${r.issueQuery.status}`,
  });
  return rows;
}
