/** End-to-end latency at a fixed moderate rate (the 2 workers running): ingest request -> callback at the receiver. */
import { callJson } from '@herald/testing';
import { cpuPerUnit, machineBusy } from '../cpu';
import { SIZE } from '../settings';
import { percentile, postEventsAtRate, type Bench, type Row } from './harness';

export async function endToEndLatency(bench: Bench): Promise<Row[]> {
  const { apiUrl, receiverUrl, cpu } = bench;
  await bench.reset();
  const e2eCount = SIZE.e2eRate * SIZE.e2eSeconds;
  const answeredAt = new Map<string, number>();
  const e2eCpu = cpu.snapshot();
  const sentAt = await postEventsAtRate(
    apiUrl,
    e2eCount,
    SIZE.e2eRate,
    (i) => ({ programId: 'bench-p', origin: 'api', eventType: 'created', objectId: `e2e-${i}`, objectType: 'subscription' }),
    answeredAt,
  );
  await bench.drain(e2eCount, []);
  const e2eCpuAfter = cpu.snapshot();
  const arrivals = (await callJson('GET', `${receiverUrl}/arrivals`)) as Record<string, number>;
  const latencies = [...sentAt]
    .map(([eventId, at]) => (arrivals[eventId] ?? NaN) - at)
    .filter(Number.isFinite)
    .sort((a, b) => a - b);
  if (latencies.length !== e2eCount) throw new Error(`latency: ${latencies.length} of ${e2eCount} callbacks matched`);
  const rows: Row[] = [50, 95, 99].map((p) => ({
    scenario: `end-to-end ingest -> receiver p${p} at ${SIZE.e2eRate} events/s (2 workers)`,
    figure: percentile(latencies, p),
    unit: 'ms',
  }));
  // Where the tail comes from: the ingest request itself, or the delivery after its 201 (which
  // includes any wait the target gate imposed: a deferral is 50 ms or more).
  const ingestTimes = [...sentAt].map(([eventId, at]) => answeredAt.get(eventId)! - at).sort((a, b) => a - b);
  const afterAnswer = [...answeredAt]
    .map(([eventId, at]) => (arrivals[eventId] ?? NaN) - at)
    .filter(Number.isFinite)
    .sort((a, b) => a - b);
  const [e2eDeferred] = await bench.prisma.$queryRaw<
    Array<{ n: bigint }>
  >`SELECT coalesce(sum(d.deferrals), 0) AS n FROM deliveries d JOIN events e ON e.id = d.event_id WHERE e.object_id LIKE 'e2e-%'`;
  rows.push({
    scenario: `end-to-end at ${SIZE.e2eRate} events/s: ingest request -> 201 p99, 201 -> receiver p99`,
    figure: percentile(ingestTimes, 99),
    unit: 'ms',
    note: `201 -> receiver p99 ${percentile(afterAnswer, 99)} ms; ${e2eDeferred!.n} deferrals by the target gate; CPU per event: ${cpuPerUnit(e2eCpu, e2eCpuAfter, e2eCount)}; the machine's cores ${Math.round(machineBusy(e2eCpu, e2eCpuAfter) * 100)} % busy`,
  });
  return rows;
}
