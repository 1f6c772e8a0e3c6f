import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { createPrismaClient } from '@herald/db/prisma';
import { useMigratedDatabase, waitFor } from '@herald/testing';
import { seedEvents } from '../bench/seed-events';
import { rawRequest } from './support/raw-http';
import { report } from './support/report';
import { recordSecret } from './support/run-dir';
import { System } from './support/system';

// The expensive-read flood of the second security review (point 3): reads bounded in time
// (createdFrom alone on a deep page, and createdFrom + createdTo + objectType on a deep page) cost
// tens of ms of database time each. Before they took a key's turn and spent its time budget
// (83c377f), one key with 16 loops of them moved another tenant's p99 from 7.8 to 641 ms, and two
// keys with 48 loops each to 1.9 s; this scenario, run with those reads counted cheap again, saw
// 305 ms and 3,002 ms. Against an events-api process at its defaults, the other tenant's ordinary
// GET /events must stay within 250 ms at the 99th percentile under both floods.

// Each noisy tenant's events, 10 µs apart: 100,000 a second, as a backfill whose events share
// their createdAt second. A deep page under createdFrom starts from the second the bucket
// counters point at and skips the events of that second before it, on the index: up to 100,000
// of them. So each read costs tens of ms (measured alone before the flood, and reported) while
// the seed of both tenants takes about a minute and a half. (Spread 5 ms apart, as the bench
// seeds, the same reads cost a few ms: the counters find any page.)
const NOISY_EVENTS = 400_000;
const NOISY_SPACING_MS = 0.01;
const QUIET_EVENTS = 2_000;
// The review's floods: one key with 16 loops, then two keys with 48 loops each.
const FLOODS = [
  { keys: 1, loops: 16 },
  { keys: 2, loops: 48 },
] as const;
// How long each phase measures the other tenant, and how often it reads (an open loop: a slow
// answer does not delay the next request, as real clients do not wait for each other).
const PHASE_MS = 10_000;
const QUIET_EVERY_MS = 50;
const TARGET_P99_MS = 250;
// What the quiet tenant's p99 is alone on this machine when nothing else runs (measured: 9 to 14
// ms). On a machine shared with other work (these 2 cores run other suites at once) the baseline of
// the same run comes out higher; that excess is the machine's, not the flood's, and the bound
// grants it: the flood itself may add no more than the target allows.
const QUIET_MACHINE_P99_MS = 25;
const QUIET_ADDRESS = '127.6.0.1';
const NOISY_ADDRESS = (key: number, loop: number): string => `127.6.${key + 1}.${loop + 1}`;

const database = useMigratedDatabase('herald_faults_reads');
let system: System;
let prisma: ReturnType<typeof createPrismaClient>;

beforeAll(async () => {
  system = new System('expensive-read-flood', database.url, 'redis://127.0.0.1:6379');
  prisma = createPrismaClient(database.url, { maxConnections: 2 });
  await system.startApi();
}, 60_000);
afterAll(async () => {
  await system?.close();
  await prisma?.$disconnect();
});

/** The p-th percentile (0-100) of `values`, nearest rank, rounded to the ms. */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN);
}

const BROWSER_HEADERS = { 'content-type': 'application/json', 'accept-language': 'en-US', origin: 'https://shop.example', 'user-agent': 'herald-faults/1.0' };

/**
 * GET /events with `key` from the client address `from` (of 127.0.0.0/8), timed. Each flood loop
 * has an address of its own, as a flood from many machines would, so the per-address connection
 * cap (100) does not refuse the flood's connections: the scenario measures the reads, not that cap.
 * Not System.listEvents, which keeps every answer for scenario 8's search: the flood's thousands
 * of pages of seeded events hold no credential and would only fill memory.
 */
async function listEvents(key: string, query: string, from: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const answer = await rawRequest(
    system.origin,
    { method: 'GET', path: `/events${query}`, headers: { 'x-api-key': key, ...BROWSER_HEADERS }, localAddress: from },
    30_000,
  );
  return { status: answer.status, ms: performance.now() - started };
}

function tally(counts: Record<string, number>, status: number): void {
  counts[status] = (counts[status] ?? 0) + 1;
}

/** A program with one merchant `${id}-m0` and that merchant's key, with ids of the scenario's own (the seed's statements name them). */
async function tenant(id: string): Promise<string> {
  for (const [path, body] of [
    ['/programs', { id, name: id }],
    ['/merchants', { id: `${id}-m0`, programId: id, name: id }],
  ] as const) {
    const created = await system.admin('POST', path, body);
    if (created.status !== 201) throw new Error(`POST /admin${path}: ${created.status} ${created.body}`);
  }
  const key = await system.admin('POST', '/api-keys', { merchantId: `${id}-m0` });
  if (key.status !== 201) throw new Error(`POST /admin/api-keys: ${key.status} ${key.body}`);
  const { key: secret } = JSON.parse(key.body) as { key: string };
  recordSecret('api key', secret);
  return secret;
}

/**
 * Requests `read()` every QUIET_EVERY_MS for `ms`, without waiting for earlier answers, and
 * returns every answer's latency and the statuses.
 */
async function measure(read: () => Promise<{ status: number; ms: number }>, ms: number): Promise<{ latencies: number[]; statuses: Record<string, number> }> {
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const pending: Array<Promise<void>> = [];
  const started = performance.now();
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      if (performance.now() - started >= ms) {
        clearInterval(timer);
        resolve();
        return;
      }
      pending.push(
        read().then((answer) => {
          tally(statuses, answer.status);
          latencies.push(answer.ms);
        }),
      );
    }, QUIET_EVERY_MS);
  });
  await Promise.all(pending);
  return { latencies, statuses };
}

it(`keeps another tenant's GET /events p99 within ${TARGET_P99_MS} ms while keys flood the API with expensive time-bounded reads`, async () => {
  const noisyIds = ['faults-reads-n1', 'faults-reads-n2'];
  const noisyKeys = [await tenant(noisyIds[0]!), await tenant(noisyIds[1]!)];
  const quietKey = await tenant('faults-reads-q');
  const seedStarted = performance.now();
  for (const id of noisyIds) await seedEvents(prisma, NOISY_EVENTS, { programId: id, merchantPrefix: `${id}-m`, merchants: 1 }, NOISY_SPACING_MS);
  await seedEvents(prisma, QUIET_EVENTS, { programId: 'faults-reads-q', merchantPrefix: 'faults-reads-q-m', merchants: 1 });
  const seedSeconds = (performance.now() - seedStarted) / 1000;

  // The two reads of the review, on deep pages (the seed's events start at 2026-01-01T00:00:00Z; a
  // payment is one event in 8): each page starts in a second of 50,000 events.
  const seedStart = Date.parse('2026-01-01T00:00:00Z');
  const at = (eventIndex: number): string => new Date(seedStart + eventIndex * NOISY_SPACING_MS).toISOString();
  const expensiveReads = [
    `?createdFrom=1970-01-01T00:00:00Z&page=${Math.floor((NOISY_EVENTS * 0.47) / 100)}&pageSize=100`,
    `?createdFrom=${at(0)}&createdTo=${at(NOISY_EVENTS * 0.9)}&objectType=payment&page=${Math.floor((NOISY_EVENTS * 0.47) / 8 / 100)}&pageSize=100`,
  ];
  // Each read alone, the median of 5 (the first read of a statement also prepares it on its connection).
  const alone: Record<string, number> = {};
  for (const query of expensiveReads) {
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const answer = await listEvents(noisyKeys[0]!, query, NOISY_ADDRESS(0, 0));
      expect(answer.status).toBe(200);
      times.push(answer.ms);
    }
    alone[query] = percentile(times, 50);
  }

  const loadAtStart = os.loadavg()[0]!;
  const quietRead = () => listEvents(quietKey, '?page=1&pageSize=20', QUIET_ADDRESS);
  expect((await quietRead()).status).toBe(200);
  const baseline = await measure(quietRead, PHASE_MS);

  const phases = [];
  for (const flood of FLOODS) {
    const statuses: Record<string, number> = {};
    let stop = false;
    const loops = noisyKeys.slice(0, flood.keys).flatMap((key, k) =>
      Array.from({ length: flood.loops }, async (_, i) => {
        // Each loop sends its next read as soon as the last is answered, whatever the answer
        // (429s included): the worst a client within its rate limit can do.
        for (let n = i; !stop; n++) tally(statuses, (await listEvents(key, expensiveReads[n % expensiveReads.length]!, NOISY_ADDRESS(k, i))).status);
      }),
    );
    // Measured once the flood is at work: every loop has had an answer.
    await waitFor(
      () => Object.values(statuses).reduce((sum, n) => sum + n, 0),
      (answered) => answered >= flood.keys * flood.loops,
      30_000,
      'an answer to every loop of the flood',
    );
    const quiet = await measure(quietRead, PHASE_MS);
    stop = true;
    await Promise.all(loops);
    phases.push({ flood, quiet, statuses });
  }

  const figures = (m: { latencies: number[]; statuses: Record<string, number> }) => ({
    p50: percentile(m.latencies, 50),
    p99: percentile(m.latencies, 99),
    max: Math.round(Math.max(...m.latencies)),
    requests: m.latencies.length,
    statuses: m.statuses,
  });
  report(
    'expensive-read flood',
    `${NOISY_EVENTS} events for each of two noisy tenants (${1000 / NOISY_SPACING_MS} a second), ${QUIET_EVENTS} for a quiet one (seeded in ${seedSeconds.toFixed(1)} s); the quiet tenant's GET /events?page=1&pageSize=20 every ${QUIET_EVERY_MS} ms for ${PHASE_MS / 1000} s alone, then during each flood of loops of ${expensiveReads.join(' and ')}`,
    {
      'machine load average (1 min) at the start / end of the measurements': `${loadAtStart.toFixed(1)} / ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores`,
      'expensive reads alone, median of 5 (ms)': Object.values(alone).map(Math.round),
      'quiet tenant alone': figures(baseline),
      ...Object.fromEntries(
        phases.flatMap(({ flood, quiet, statuses }) => [
          [`quiet tenant, ${flood.keys} key(s) x ${flood.loops} loops`, figures(quiet)],
          [`flood answers, ${flood.keys} key(s) x ${flood.loops} loops`, statuses],
        ]),
      ),
    },
  );
  // The scenario measures what it means to: reads that cost several times an ordinary page, and
  // floods that were served (a flood refused at once would load nothing).
  for (const ms of Object.values(alone)) expect(ms).toBeGreaterThanOrEqual(3 * percentile(baseline.latencies, 50));
  const bound = TARGET_P99_MS + Math.max(0, percentile(baseline.latencies, 99) - QUIET_MACHINE_P99_MS);
  for (const { flood, quiet, statuses } of phases) {
    expect(statuses[200] ?? 0).toBeGreaterThanOrEqual(flood.keys * 10);
    expect(quiet.statuses).toEqual({ 200: quiet.latencies.length });
    expect(percentile(quiet.latencies, 99)).toBeLessThanOrEqual(bound);
  }
}, 240_000);
