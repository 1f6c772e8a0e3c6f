/**
 * `pnpm bench --scale`: GET /events at 1,000,000 and at 10,000,000 events in one run, and the
 * per-unit costs docs/scaling.md states (bytes on disk per event, delivery and attempt row; CPU
 * per ingested event and per GET /events).
 *
 * The two tables live in two databases, each seeded with COPY (bench/seed-scale.ts) and served by
 * an events-api of its own, and are measured in turns (1M, 10M, 1M, 10M, …): on a shared, noisy
 * machine, what the neighbours do then weighs on both sides of the ratio alike.
 * BENCH_SCALE_EVENTS sets the larger count (default 10,000,000; the smaller is a tenth) for a shorter try.
 */
import autocannon from 'autocannon';
import pg from 'pg';
import { callJson, waitFor, type ServiceProcess } from '@herald/testing';
import { cpuPerUnit, machineBusy, type CpuAccounts } from './cpu';
import { ingestBatches } from './ingest-load';
import { merchantShare, seedScaleEvents, type ScaleTenant } from './seed-scale';

/** A database and the events-api serving it. */
interface Table {
  databaseUrl: string;
  apiUrl: string;
}

export interface ScaleOptions extends Table {
  /** Creates the database of the smaller table (migrated, dropped by the caller's cleanup) and starts its events-api. */
  smallerTable: () => Promise<Table>;
  receiverUrl: string;
  adminToken: string;
  ingestToken: string;
  /** Accounts the CPU of the events-apis, the workers and PostgreSQL's backends. */
  cpu: CpuAccounts;
  /** Starts a delivery-worker on the larger table's database, stopped by the caller's cleanup. */
  startWorker: () => ServiceProcess;
  /** Events of the larger table; the smaller holds a tenth. */
  events: number;
  /** Events ingested through POST /internal/events for the ingest CPU and the delivery rows. */
  ingestEvents: number;
  /** Turns of GET /events on each table, and seconds of each turn. */
  listRounds: number;
  listSeconds: number;
  addRow: (row: { scenario: string; figure: number; unit: string; target?: string; note?: string }) => void;
  log: (message: string) => void;
}

const TENANT: ScaleTenant = { programId: 'bench-s', merchantPrefix: 'bench-s-m', merchants: 4 };
const PAGE_SIZE = 20;
const DEEP_PAGE = 10_000;
const HEADERS = { 'content-type': 'application/json', 'accept-language': 'en-US', 'user-agent': 'herald-bench', origin: 'https://bench.example' };
const round = (n: number, digits = 2): number => Number(n.toFixed(digits));
const thousands = (n: number): string => n.toLocaleString('en-US');

interface ListLoad {
  rps: number;
  p50: number;
  p99: number;
  /** CPU per request by process. */
  cpu: string;
  busy: number;
}

/** A seeded table with the API key of its first merchant. */
interface SeededTable extends Table {
  events: number;
  headers: Record<string, string>;
}

export async function runScale(options: ScaleOptions): Promise<void> {
  const { log, addRow } = options;
  const small = await seedTable(await options.smallerTable(), Math.round(options.events / 10), options);
  const large = await seedTable(options, options.events, options);
  // The deepest full page of the smaller table's merchant, so that both answer a full page.
  const deepPage = Math.min(DEEP_PAGE, Math.floor(merchantShare(small.events, TENANT, 0) / PAGE_SIZE));

  for (const page of [1, deepPage]) {
    const turns = new Map<SeededTable, ListLoad[]>([
      [small, []],
      [large, []],
    ]);
    for (let turn = 0; turn < options.listRounds; turn += 1) {
      for (const [table, loads] of turns) loads.push(await listLoad(table, page, options));
    }
    const summary = new Map([...turns].map(([table, loads]) => [table, summarize(loads)]));
    for (const [table, load] of summary) {
      addRow({
        scenario: `scale: GET /events page ${page}, ${thousands(table.events)} events (${thousands(merchantShare(table.events, TENANT, 0))} of the key's merchant)`,
        figure: load.p99,
        unit: 'ms p99',
        note: `p50 ${load.p50} ms, ${round(load.rps, 0)} req/s (median of ${options.listRounds} turns of ${options.listSeconds} s, 32 connections), machine ${Math.round(load.busy * 100)} % busy; CPU per request (last turn): ${load.cpu}`,
      });
    }
    const [s, l] = [summary.get(small)!, summary.get(large)!];
    addRow({
      scenario: `scale: GET /events page ${page}, p99 at ${thousands(large.events)} / at ${thousands(small.events)} events`,
      figure: round(l.p99 / s.p99, 2),
      unit: 'x',
      target: '<= 1.5',
      note: `p50 ${round(l.p50 / s.p50, 2)} x, req/s ${round(l.rps / s.rps, 2)} x`,
    });
  }

  await ingestAndDeliver(options);
  const client = new pg.Client({ connectionString: options.databaseUrl });
  await client.connect();
  try {
    await perRowSizes(client, addRow);
  } finally {
    await client.end();
  }
  log('scale run done');
}

/** Creates the tenant through the table's API, seeds `events` events and checks GET /events counts them all. */
async function seedTable(table: Table, events: number, options: ScaleOptions): Promise<SeededTable> {
  const admin = (path: string, body: unknown): Promise<unknown> =>
    callJson('POST', `${table.apiUrl}${path}`, { token: options.adminToken, body, expect: [201] });
  await admin('/admin/programs', { id: TENANT.programId, name: 'scale' });
  for (let m = 0; m < TENANT.merchants; m += 1)
    await admin('/admin/merchants', { id: `${TENANT.merchantPrefix}${m}`, programId: TENANT.programId, name: 'scale' });
  const { key } = (await admin('/admin/api-keys', { merchantId: `${TENANT.merchantPrefix}0` })) as { key: string };

  options.log(`seeding ${thousands(events)} events`);
  const client = new pg.Client({ connectionString: table.databaseUrl });
  await client.connect();
  try {
    const seed = await seedScaleEvents(client, { tenant: TENANT, count: events, now: new Date(), days: 365, burstHour: 9, log: options.log });
    options.addRow({
      scenario: `scale: seed ${thousands(events)} events with COPY into an empty table, with counters`,
      figure: round(
        Object.values(seed.seconds).reduce((a, b) => a + b, 0),
        1,
      ),
      unit: 's',
      note: `COPY ${Math.round(seed.copyRowsPerSecond)} rows/s; ${Object.entries(seed.seconds)
        .map(([phase, s]) => `${phase} ${round(s, 1)} s`)
        .join(', ')}`,
    });
  } finally {
    await client.end();
  }
  const seeded = { ...table, events, headers: { ...HEADERS, 'x-api-key': key } };
  const share = merchantShare(events, TENANT, 0);
  await checkPage(seeded, 1, share);
  await checkPage(seeded, Math.floor(share / PAGE_SIZE), share);
  return seeded;
}

/** Medians of the turns' latencies and rates; the last turn's CPU. */
function summarize(loads: ListLoad[]): ListLoad {
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  return {
    rps: median(loads.map((l) => l.rps)),
    p50: median(loads.map((l) => l.p50)),
    p99: median(loads.map((l) => l.p99)),
    busy: median(loads.map((l) => l.busy)),
    cpu: loads.at(-1)!.cpu,
  };
}

/** GET /events?page=…: a 200 with the exact count and a full page, or the run fails. */
async function checkPage(table: SeededTable, page: number, expectCount: number): Promise<void> {
  const body = await callJson<{ count: number; data: unknown[] }>('GET', `${table.apiUrl}/events?page=${page}&pageSize=${PAGE_SIZE}`, {
    headers: table.headers,
    expect: [200],
  });
  if (body.count !== expectCount || body.data.length !== PAGE_SIZE)
    throw new Error(`GET /events?page=${page}: count ${body.count} (expected ${expectCount}), ${body.data.length} items`);
}

/** 32 connections on one page of the table's GET /events for `listSeconds`, with the CPU each process spent per request. */
async function listLoad(table: SeededTable, page: number, options: ScaleOptions): Promise<ListLoad> {
  const url = `${table.apiUrl}/events?page=${page}&pageSize=${PAGE_SIZE}`;
  const before = options.cpu.snapshot();
  const result = await autocannon({ url, connections: 32, duration: options.listSeconds, headers: table.headers });
  const after = options.cpu.snapshot();
  if (result.errors > 0 || result.non2xx > 0 || result.timeouts > 0)
    throw new Error(`autocannon ${url}: ${result.errors} errors, ${result.non2xx} non-2xx, ${result.timeouts} timeouts`);
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpu: cpuPerUnit(before, after, result.requests.total),
    busy: machineBusy(before, after),
  };
}

/**
 * Ingests `ingestEvents` payment events (each fans out to 2 targets) with no worker running, so
 * that the CPU per event is the ingest's alone; then one delivery-worker delivers them all, timed
 * with its CPU per callback beside the seeded months, which leaves a delivery row and an attempt
 * row per callback for perRowSizes.
 */
async function ingestAndDeliver(options: ScaleOptions): Promise<void> {
  const { receiverUrl, cpu, log, addRow } = options;
  await callJson('POST', `${receiverUrl}/reset`);
  const before = cpu.snapshot();
  // The larger table's events-api and database: the ingest writes beside its 10,000,000 events.
  const rate = await ingestBatches({
    apiUrl: options.apiUrl,
    token: options.ingestToken,
    count: options.ingestEvents,
    batchSize: 100,
    inFlight: 4,
    programId: 'bench-p',
    merchantId: 'bench-m',
    objectType: 'payment',
    idPrefix: 'scale-',
  });
  const after = cpu.snapshot();
  addRow({
    scenario: `scale: ingest CPU per event (${options.ingestEvents} events in batches of 100, 4 in flight, fan-out 2, no worker running)`,
    figure: round(rate, 0),
    unit: 'events/s',
    note: `machine ${Math.round(machineBusy(before, after) * 100)} % busy; CPU per event: ${cpuPerUnit(before, after, options.ingestEvents)}`,
  });
  const worker = options.startWorker();
  cpu.add(worker.child.pid, 'delivery-worker');
  const expected = 2 * options.ingestEvents;
  const deadline = Date.now() + 300_000;
  const callbacks = async (): Promise<number> => (await callJson<{ callbacks: number }>('GET', `${receiverUrl}/stats`)).callbacks;
  // Timed from the first callback on, so that the worker's start is not in the figures: read often
  // until it comes, then every 200 ms (the reads cost the receiver CPU, which is measured).
  const firstCount = await waitFor(callbacks, (n) => n > 0, 300_000, 'a first callback', 20);
  const first = { at: performance.now(), callbacks: firstCount, cpu: cpu.snapshot() };
  if (firstCount < expected) await waitFor(callbacks, (n) => n >= expected, Math.max(0, deadline - Date.now()), `${expected} callbacks`, 200);
  const delivered = expected - first.callbacks;
  const done = cpu.snapshot();
  addRow({
    scenario: `scale: delivery beside ${thousands(options.events)} events in their monthly partitions (1 worker, default settings, fan-out 2)`,
    figure: round(delivered / ((performance.now() - first.at) / 1000), 0),
    unit: 'callbacks/s',
    note: `machine ${Math.round(machineBusy(first.cpu, done) * 100)} % busy; CPU per callback: ${cpuPerUnit(first.cpu, done, delivered)}`,
  });
  log(`delivered ${expected} callbacks`);
  await worker.stop('SIGTERM', 15_000);
}

/**
 * Bytes on disk per row (heap, TOAST and indexes, all partitions) of events, deliveries and
 * delivery_attempts, and of the event counters per event: what a row costs, fixed overheads
 * (empty partitions, the dead versions of updated deliveries) included.
 */
async function perRowSizes(client: pg.Client, addRow: ScaleOptions['addRow']): Promise<void> {
  // pg_partition_tree lists a partitioned table and its partitions, and nothing for a plain table.
  const sizeOf = async (table: string): Promise<{ bytes: number; heap: number; rows: number }> => {
    const { rows } = await client.query<{ bytes: string; heap: string; rows: string }>(
      `WITH relations AS (SELECT coalesce((SELECT array_agg(relid) FROM pg_partition_tree($1::regclass)), ARRAY[$1::regclass]) AS ids)
       SELECT (SELECT sum(pg_total_relation_size(id)) FROM relations, unnest(ids) id)::bigint AS bytes,
              (SELECT sum(pg_table_size(id)) FROM relations, unnest(ids) id)::bigint AS heap,
              (SELECT count(*) FROM ${table})::bigint AS rows`,
      [table],
    );
    return { bytes: Number(rows[0]!.bytes), heap: Number(rows[0]!.heap), rows: Number(rows[0]!.rows) };
  };
  const events = await sizeOf('events');
  for (const table of ['events', 'deliveries', 'delivery_attempts']) {
    const size = table === 'events' ? events : await sizeOf(table);
    addRow({
      scenario: `scale: bytes on disk per ${table} row (table + indexes)`,
      figure: Math.round(size.bytes / size.rows),
      unit: 'bytes',
      note: `table ${Math.round(size.heap / size.rows)} bytes, indexes ${Math.round((size.bytes - size.heap) / size.rows)} bytes; ${size.rows.toLocaleString('en-US')} rows, ${Math.round(size.bytes / 2 ** 20)} MB`,
    });
  }
  for (const table of ['event_counts', 'event_bucket_counts']) {
    const size = await sizeOf(table);
    addRow({
      scenario: `scale: bytes on disk of ${table} per event`,
      figure: round(size.bytes / events.rows, 1),
      unit: 'bytes',
      note: `${size.rows.toLocaleString('en-US')} counter rows, ${Math.round(size.bytes / 2 ** 20)} MB`,
    });
  }
}
