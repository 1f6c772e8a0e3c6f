/**
 * API isolation: one merchant key runs 32 concurrent expensive GET /events loops over its many
 * events (an extension filter, so the count and the page's skip go over its whole index), while
 * another tenant lists its own events at a steady rate, the ingest stores events and /readyz is
 * polled. Measures the other tenant's latency and 503s, the ingest's latency and /readyz's answers.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { PrismaClient } from '@herald/db/prisma';
import { callJson } from '@herald/testing';
import { seedEvents } from './seed-events';

export interface ApiIsolationOptions {
  apiUrl: string;
  adminToken: string;
  ingestToken: string;
  prisma: PrismaClient;
  /** Events of the noisy merchant (1,000,000 in a full run). */
  noisyEvents: number;
  /** How long the noisy key's loops run. */
  seconds: number;
  log: (message: string) => void;
}

/** What the scenario measured; latencies in ms. */
export interface ApiIsolationResult {
  /** The other tenant's GET /events page 1, alone and while the noisy key runs. */
  quietAlone: { p50: number; p99: number; requests: number };
  quiet: { p50: number; p99: number; requests: number; statuses: Record<string, number> };
  readyz: { polls: number; statuses: Record<string, number> };
  ingest: { p50: number; p99: number; requests: number; statuses: Record<string, number> };
  /** The noisy key's answers by status, and the query it ran. */
  noisy: { statuses: Record<string, number>; query: string; seconds: number };
  /** The issue's own query (no eventType), alone: its status and time. */
  issueQuery: { status: number | 'error'; ms: number };
}

const NOISY_LOOPS = 32;
const QUIET_RATE = 20;
const READYZ_INTERVAL_MS = 250;
const INGEST_RATE = 5;
const HEADERS = { 'content-type': 'application/json', 'accept-language': 'en-US', 'user-agent': 'herald-bench', origin: 'https://bench.example' };

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!);
}

function tally(statuses: Record<string, number>, status: number | string): void {
  statuses[status] = (statuses[status] ?? 0) + 1;
}

/** One request, timed; a network error counts as status "error". */
async function timed(url: string, init: RequestInit): Promise<{ status: number | 'error'; ms: number; body: string }> {
  const started = performance.now();
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
    const body = await res.text();
    return { status: res.status, ms: performance.now() - started, body };
  } catch {
    return { status: 'error', ms: performance.now() - started, body: '' };
  }
}

/** Calls `fn` every `intervalMs` (open loop: a slow answer does not delay the next call) until `until`. */
async function atRate(intervalMs: number, until: () => boolean, fn: () => Promise<void>): Promise<void> {
  const pending: Array<Promise<void>> = [];
  const started = performance.now();
  for (let i = 0; !until(); i += 1) {
    pending.push(fn());
    const wait = started + (i + 1) * intervalMs - performance.now();
    if (wait > 0) await sleep(wait);
  }
  await Promise.all(pending);
}

export async function runApiIsolation(options: ApiIsolationOptions): Promise<ApiIsolationResult> {
  const { apiUrl, log } = options;
  const admin = (path: string, body: unknown): Promise<unknown> => callJson('POST', `${apiUrl}${path}`, { token: options.adminToken, body, expect: [201] });
  // The noisy merchant in one program, the quiet one in another: two tenants, one database.
  await admin('/admin/programs', { id: 'bench-iso-n', name: 'noisy' });
  await admin('/admin/merchants', { id: 'bench-iso-n-m0', programId: 'bench-iso-n', name: 'noisy' });
  await admin('/admin/programs', { id: 'bench-iso-q', name: 'quiet' });
  await admin('/admin/merchants', { id: 'bench-iso-q-m0', programId: 'bench-iso-q', name: 'quiet' });
  const noisyKey = ((await admin('/admin/api-keys', { merchantId: 'bench-iso-n-m0' })) as { key: string }).key;
  const quietKey = ((await admin('/admin/api-keys', { merchantId: 'bench-iso-q-m0' })) as { key: string }).key;
  log(`api isolation: seeding ${options.noisyEvents} events of the noisy merchant`);
  const seedStarted = performance.now();
  await seedEvents(options.prisma, options.noisyEvents, { programId: 'bench-iso-n', merchantPrefix: 'bench-iso-n-m', merchants: 1 });
  await seedEvents(options.prisma, 10_000, { programId: 'bench-iso-q', merchantPrefix: 'bench-iso-q-m', merchants: 1 });
  log(`api isolation: seeded in ${(performance.now() - seedStarted) / 1000} s`);

  const quietUrl = `${apiUrl}/events?page=1&pageSize=20`;
  const quietRequest = (): Promise<{ status: number | 'error'; ms: number; body: string }> =>
    timed(quietUrl, { headers: { ...HEADERS, 'x-api-key': quietKey } });
  const first = await quietRequest();
  if (first.status !== 200) throw new Error(`the quiet tenant's GET /events answered ${first.status}: ${first.body.slice(0, 300)}`);

  // The issue's query (deep under createdFrom) with eventType too, whose count and skip no counter
  // serves: the most expensive read there is. Where the API bounds the skip (400 page_too_deep), the
  // noisy key uses the deepest page it allows.
  const issueQuery = 'createdFrom=1970-01-01T00:00:00Z&page=9999&pageSize=100';
  const issueProbe = await timed(`${apiUrl}/events?${issueQuery}`, { headers: { ...HEADERS, 'x-api-key': noisyKey } });
  log(`api isolation: the issue's query ${issueQuery} answered ${issueProbe.status} in ${Math.round(issueProbe.ms)} ms alone`);
  let noisyQuery = `eventType=created&${issueQuery}`;
  const probe = await timed(`${apiUrl}/events?${noisyQuery}`, { headers: { ...HEADERS, 'x-api-key': noisyKey } });
  if (probe.status === 400) {
    const { maxSkip } = JSON.parse(probe.body) as { maxSkip?: number };
    if (typeof maxSkip !== 'number') throw new Error(`the noisy probe answered 400: ${probe.body.slice(0, 300)}`);
    noisyQuery = `eventType=created&createdFrom=1970-01-01T00:00:00Z&page=${Math.floor(maxSkip / 100) + 1}&pageSize=100`;
  } else if (probe.status !== 200) {
    throw new Error(`the noisy probe answered ${probe.status}: ${probe.body.slice(0, 300)}`);
  }
  const alone = await timed(`${apiUrl}/events?${noisyQuery}`, { headers: { ...HEADERS, 'x-api-key': noisyKey } });
  log(`api isolation: noisy query ${noisyQuery} answered ${alone.status} in ${Math.round(alone.ms)} ms alone`);

  // The quiet tenant alone, as the reference.
  const aloneLatencies: number[] = [];
  const aloneUntil = performance.now() + 3_000;
  await atRate(
    1000 / QUIET_RATE,
    () => performance.now() > aloneUntil,
    async () => {
      const r = await quietRequest();
      if (r.status === 200) aloneLatencies.push(r.ms);
    },
  );

  // The noisy key's loops: each sends its next request as soon as the last is answered, whatever
  // the answer (429s included): the worst a client within its rate limit can do.
  const noisyStatuses: Record<string, number> = {};
  let stop = false;
  const noisyStarted = performance.now();
  const noisy = Promise.all(
    Array.from({ length: NOISY_LOOPS }, async () => {
      while (!stop) {
        const r = await timed(`${apiUrl}/events?${noisyQuery}`, { headers: { ...HEADERS, 'x-api-key': noisyKey } });
        tally(noisyStatuses, r.status);
        if (r.status === 'error') await sleep(50);
      }
    }),
  );
  // Measured from the moment the loops are at work: a fixed second of ramp-up, part of what the
  // section measures (not a wait for an event), kept as it was so that its figures stay comparable.
  await sleep(1_000);
  const until = performance.now() + options.seconds * 1000;
  const done = (): boolean => performance.now() > until;
  const quiet = { latencies: [] as number[], statuses: {} as Record<string, number> };
  const readyz = { polls: 0, statuses: {} as Record<string, number> };
  const ingest = { latencies: [] as number[], statuses: {} as Record<string, number> };
  let ingested = 0;
  await Promise.all([
    atRate(1000 / QUIET_RATE, done, async () => {
      const r = await quietRequest();
      tally(quiet.statuses, r.status);
      quiet.latencies.push(r.ms);
    }),
    atRate(READYZ_INTERVAL_MS, done, async () => {
      const r = await timed(`${apiUrl}/readyz`, {});
      readyz.polls += 1;
      tally(readyz.statuses, r.status);
    }),
    atRate(1000 / INGEST_RATE, done, async () => {
      ingested += 1;
      const event = {
        programId: 'bench-iso-q',
        merchantId: 'bench-iso-q-m0',
        id: `Event-${randomUUID()}`,
        origin: 'api',
        eventType: 'created',
        objectId: `iso-${ingested}`,
        objectType: 'payment',
      };
      const r = await timed(`${apiUrl}/internal/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${options.ingestToken}` },
        body: JSON.stringify(event),
      });
      tally(ingest.statuses, r.status);
      ingest.latencies.push(r.ms);
    }),
  ]);
  stop = true;
  await noisy;
  return {
    quietAlone: { p50: percentile(aloneLatencies, 50), p99: percentile(aloneLatencies, 99), requests: aloneLatencies.length },
    quiet: { p50: percentile(quiet.latencies, 50), p99: percentile(quiet.latencies, 99), requests: quiet.latencies.length, statuses: quiet.statuses },
    readyz,
    ingest: { p50: percentile(ingest.latencies, 50), p99: percentile(ingest.latencies, 99), requests: ingest.latencies.length, statuses: ingest.statuses },
    noisy: { statuses: noisyStatuses, query: noisyQuery, seconds: (performance.now() - noisyStarted) / 1000 },
    issueQuery: { status: issueProbe.status, ms: Math.round(issueProbe.ms) },
  };
}
