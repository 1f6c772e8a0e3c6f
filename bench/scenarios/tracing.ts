/**
 * What tracing costs the delivery: 1 delivery-worker draining the same ingest's callbacks with
 * tracing off and on (every trace sampled, spans exported over OTLP/HTTP protobuf to a collector
 * that discards, bench/otlp-sink.ts), in alternated rounds. The ingest goes through an events-api
 * traced the same way, so that every job carries its trace to the worker, as in production.
 */
import { callJson } from '@herald/testing';
import { formatCpu } from '../cpu';
import { ingestBatches } from '../ingest-load';
import { median } from '../paired-rounds';
import { INGEST_TOKEN, SIZE } from '../settings';
import { busyNote, log, round, serviceLogs, startListening, startProcess, type Bench, type Row } from './harness';

/** Tracing on, as an operator turns it on: OTLP to a collector, the default sampler (every trace). */
function tracingEnv(sinkUrl: string): Record<string, string> {
  return { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl };
}

export async function tracingCost(bench: Bench): Promise<Row[]> {
  const sink = await startListening('bench/otlp-sink.ts', {});
  const sinkUrl = `http://127.0.0.1:${sink.port}`;
  const api = await startListening('services/events-api/src/server.ts', { ...bench.env, ...tracingEnv(sinkUrl), PORT: '0' });
  serviceLogs.push(['events-api (traced)', api.proc]);
  bench.cpu.add(sink.proc.child.pid, 'otlp sink');
  const events = SIZE.ingestEvents;
  const rates = { off: [] as number[], on: [] as number[] };
  // The worker's own CPU per callback: on a machine others share, a steadier measure than the rate.
  const workerCpu = { off: [] as number[], on: [] as number[] };
  const notes: Record<'off' | 'on', string> = { off: '', on: '' };
  const drainWith = async (traced: boolean, roundIndex: number): Promise<void> => {
    await ingestBatches({
      apiUrl: `http://127.0.0.1:${api.port}`,
      token: INGEST_TOKEN,
      count: events,
      batchSize: SIZE.ingestBatch,
      inFlight: 2,
      programId: 'bench-p',
      merchantId: 'bench-m',
      objectType: 'payment',
      idPrefix: `trace-${roundIndex}-${traced ? 'on' : 'off'}-`,
    });
    await bench.reset();
    const worker = startProcess('services/delivery-worker/src/main.ts', { ...bench.env, ...(traced ? tracingEnv(sinkUrl) : {}) });
    serviceLogs.push([`delivery-worker (tracing ${traced ? 'on' : 'off'})`, worker]);
    const role = `delivery-worker, tracing ${traced ? 'on' : 'off'}`;
    const result = await bench.drain(2 * events, [worker], role);
    workerCpu[traced ? 'on' : 'off'].push(result.cpu.get(role) ?? NaN);
    await worker.stop('SIGTERM', 15_000);
    rates[traced ? 'on' : 'off'].push(result.rate);
    notes[traced ? 'on' : 'off'] = `${busyNote(result)}; CPU per callback ${formatCpu(result.cpu)}`;
  };
  for (let r = 0; r < SIZE.rounds; r += 1) {
    log(`tracing round ${r + 1} of ${SIZE.rounds}`);
    // Alternated, so that neither side always runs on a warmer (or busier) machine.
    for (const traced of r % 2 === 0 ? [false, true] : [true, false]) await drainWith(traced, r);
  }
  const exported = await callJson<{ exports: number; bytes: number }>('GET', `${sinkUrl}/stats`);
  const off = median(rates.off);
  const on = median(rates.on);
  const cpuOff = median(workerCpu.off);
  const cpuOn = median(workerCpu.on);
  return [
    {
      scenario: `1 delivery-worker, tracing off (the plain drain), ${2 * events} callbacks`,
      figure: round(off, 0),
      unit: 'callbacks/s',
      note: notes.off,
    },
    {
      scenario: '1 delivery-worker, tracing on: every trace sampled, OTLP/HTTP protobuf to a discarding collector',
      figure: round(on, 0),
      unit: 'callbacks/s',
      ceiling: off,
      ceilingName: 'tracing off (median of the same rounds)',
      target: '>= 0.9',
      note: `${notes.on}; ${exported.exports} exports, ${round(exported.bytes / 2 ** 20, 1)} MB, rounds on/off ${rates.on.map((x, i) => round(x / rates.off[i]!, 2)).join(' ')}`,
    },
    {
      // The rate a worker could reach were it alone on its core: its CPU per callback, off against on.
      scenario: "1 delivery-worker, tracing on: the worker's CPU per callback, as a rate against tracing off",
      figure: round(cpuOn, 0),
      unit: 'µs per callback',
      ratio: round(cpuOff / cpuOn, 3),
      ceilingName: `tracing off's ${round(cpuOff, 0)} µs (medians of the same rounds)`,
      target: '>= 0.9',
    },
  ];
}
