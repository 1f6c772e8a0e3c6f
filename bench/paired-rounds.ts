/**
 * Herald's figures beside their ceilings in alternated rounds. These machines' speed drifts by
 * tens of percent between minutes, so a ratio of two figures measured minutes apart says as much
 * about the machine as about Herald. Each round measures Herald and its ceilings back to back, and
 * the next round takes them in the opposite order, so that a drift weighs on both sides. A ratio's
 * row reports the round whose ratio is the median, with every round's ratio in its note.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PrismaClient } from '@herald/db/prisma';
import { callJson, requestJson, type ServiceProcess } from '@herald/testing';
import {
  cannon,
  durableDeliveryCeiling,
  durableRows,
  listSqlRows,
  pageOneQuery,
  startBareSqlPage,
  type CeilingRow,
  type Drain,
  type DrainResult,
} from './ceilings';
import { formatCpu } from './cpu';
import { bareIngest, ingestBatches } from './ingest-load';
import { seedEvents } from './seed-events';

/**
 * Of rounds that each hold Herald's measurement and its ceilings' (of the same kind), the round
 * whose Herald-to-`ceiling` ratio is the median (the lower middle of an even count), and every
 * round's ratio in order.
 */
export function medianRound<R extends { herald: unknown }>(
  rounds: readonly R[],
  ceiling: Exclude<keyof R, 'herald'>,
  value: (measured: R['herald']) => number,
): { round: R; ratios: number[] } {
  if (rounds.length === 0) throw new Error('medianRound: no rounds');
  const ratios = rounds.map((round) => value(round.herald) / value(round[ceiling] as R['herald']));
  const byRatio = rounds.map((round, i) => ({ round, ratio: ratios[i]! })).sort((a, b) => a.ratio - b.ratio);
  return { round: byRatio[Math.floor((byRatio.length - 1) / 2)]!.round, ratios };
}

/** The median of some figures (the lower middle of an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/** A note's list of per-round ratios, e.g. `rounds 0.61 / 0.58 / 0.63`. */
function roundsNote(ratios: readonly number[]): string {
  return ratios.length < 2 ? '1 round' : `rounds ${ratios.map((r) => r.toFixed(3)).join(' / ')} (alternated)`;
}

/** Runs `steps` in order in even rounds and in reverse in odd ones. */
async function inRoundOrder(round: number, steps: Array<() => Promise<void>>): Promise<void> {
  for (const step of round % 2 === 0 ? steps : [...steps].reverse()) await step();
}

export interface DeliveryRoundsContext {
  apiUrl: string;
  receiverUrl: string;
  databaseUrl: string;
  redisUrl: string;
  /** Queue prefix of the bare ceilings' queues (the caller deletes its keys). */
  barePrefix: string;
  adminToken: string;
  ingestToken: string;
  concurrency: number;
  sizes: { bareJobs: number; ingestEvents: number; ingestBatch: number };
  drain: Drain;
  resetReceiver: () => Promise<void>;
  /** The bench's bare BullMQ + POST ceiling in 1 process. */
  bareBullmq: () => Promise<DrainResult>;
  /** A delivery-worker with the bench's settings. */
  startHeraldWorker: () => ServiceProcess;
  startProcess: (script: string, env: Record<string, string>) => ServiceProcess;
  /** VmHWM of a process, in MB. */
  peakRssMb: (pid: number | undefined) => number;
  log: (message: string) => void;
}

/** One round of the ingest and the 1-worker delivery beside their ceilings. */
export interface DeliveryRound {
  /** Events per second: Herald's ingest, and the same rows and jobs written the bare way. */
  ingest: { herald: number; bare: number };
  /**
   * Callbacks per second: Herald with 1 worker, bare BullMQ + POST, the durable ceiling, and the
   * durable ceiling with jobs prioritized as Herald's are (what BullMQ's prioritized set costs).
   */
  delivery: { herald: DrainResult; bare: DrainResult; durable: DrainResult; prioritized: DrainResult };
  /** The Herald worker's peak RSS in MB. */
  heraldPeakRssMb: number;
}

/**
 * The ingest against its ceiling and 1 delivery-worker against bare BullMQ + POST and the durable
 * ceiling, in `rounds` alternated rounds (after a warm-up of both ingests). Herald's ingest of a
 * round queues the callbacks its worker drains in that round (`ingestEvents` payment events, fan-out
 * 2); the ceilings drain `bareJobs` each. Nothing of a round is left queued.
 */
export async function deliveryRounds(ctx: DeliveryRoundsContext, rounds: number): Promise<DeliveryRound[]> {
  const { sizes } = ctx;
  const heraldIngest = (count: number, programId: string, merchantId: string | undefined, idPrefix: string): Promise<number> =>
    ingestBatches({
      apiUrl: ctx.apiUrl,
      token: ctx.ingestToken,
      count,
      batchSize: sizes.ingestBatch,
      inFlight: 2,
      programId,
      ...(merchantId ? { merchantId } : {}),
      objectType: 'payment',
      idPrefix,
    });
  const bareLoad = {
    databaseUrl: ctx.databaseUrl,
    redisUrl: ctx.redisUrl,
    queuePrefix: ctx.barePrefix,
    batchSize: sizes.ingestBatch,
    inFlight: 2,
    programId: 'bench-p',
    merchantId: 'bench-m',
  };
  // Warm-up (JIT, pools): Herald's on a program with no target (no deliveries, nothing for the workers).
  await callJson('POST', `${ctx.apiUrl}/admin/programs`, { token: ctx.adminToken, body: { id: 'bench-w', name: 'warm-up' }, expect: [201] });
  await heraldIngest(sizes.ingestBatch * 4, 'bench-w', undefined, 'warm-');
  await bareIngest({ ...bareLoad, count: sizes.ingestBatch * 4 });

  const results: DeliveryRound[] = [];
  for (let round = 0; round < rounds; round += 1) {
    ctx.log(`round ${round + 1} of ${rounds}: ingest and 1 delivery-worker beside their ceilings`);
    const ingest = { herald: NaN, bare: NaN };
    await inRoundOrder(round, [
      async () => {
        ingest.bare = await bareIngest({ ...bareLoad, count: sizes.ingestEvents });
      },
      async () => {
        ingest.herald = await heraldIngest(sizes.ingestEvents, 'bench-p', 'bench-m', `r${round}-`);
      },
    ]);
    // Herald's ingest always comes before its drain: the callbacks it queued wait for the worker.
    const delivery = {} as DeliveryRound['delivery'];
    let heraldPeakRssMb = NaN;
    const ceilingSteps = [
      async () => {
        await ctx.resetReceiver();
        delivery.bare = await ctx.bareBullmq();
      },
      ...([false, true] as const).map((prioritized) => async () => {
        await ctx.resetReceiver();
        delivery[prioritized ? 'prioritized' : 'durable'] = await durableDeliveryCeiling({
          databaseUrl: ctx.databaseUrl,
          redisUrl: ctx.redisUrl,
          url: `${ctx.receiverUrl}/hook/durable`,
          prefix: ctx.barePrefix,
          concurrency: ctx.concurrency,
          total: sizes.bareJobs,
          processes: 1,
          prioritized,
          programId: 'bench-p',
          merchantId: 'bench-m',
          drain: ctx.drain,
          startProcess: ctx.startProcess,
        });
      }),
    ];
    const heraldStep = async (): Promise<void> => {
      await ctx.resetReceiver();
      const worker = ctx.startHeraldWorker();
      delivery.herald = await ctx.drain(2 * sizes.ingestEvents, [worker], 'delivery-worker');
      heraldPeakRssMb = ctx.peakRssMb(worker.child.pid);
      await worker.stop('SIGTERM', 15_000);
    };
    await inRoundOrder(round, [...ceilingSteps, heraldStep]);
    results.push({ ingest, delivery, heraldPeakRssMb });
  }
  return results;
}

/** The rows of the delivery rounds: the ceilings, the ingest and 1 worker, each ratio from its median round. */
export function deliveryRoundRows(results: readonly DeliveryRound[], options: { concurrency: number; ingestBatch: number }): CeilingRow[] {
  const rate = (r: DrainResult): number => r.rate;
  const busy = (r: DrainResult): string => `machine ${Math.round(r.busy * 100)} % busy`;
  const delivery = results.map((r) => r.delivery);
  const ingest = results.map((r) => r.ingest);
  const durableVsBare = medianRound(
    delivery.map((d) => ({ herald: d.durable, bare: d.bare })),
    'bare',
    rate,
  );
  const heraldVsBare = medianRound(delivery, 'bare', rate);
  const heraldVsDurable = medianRound(delivery, 'durable', rate);
  const prioritizedVsDurable = medianRound(
    delivery.map((d) => ({ herald: d.prioritized, durable: d.durable })),
    'durable',
    rate,
  );
  const heraldVsPrioritized = medianRound(delivery, 'prioritized', rate);
  const ingestVsBare = medianRound(ingest, 'bare', (n: number) => n);
  const bareRates = delivery.map((d) => d.bare.rate);
  return [
    {
      scenario: `ceiling: bare BullMQ worker + 1 POST, concurrency ${options.concurrency}`,
      figure: Math.round(median(bareRates)),
      unit: 'jobs/s',
      note: `median of ${bareRates.map(Math.round).join(' / ')}`,
    },
    {
      ...durableRows.ceiling(durableVsBare.round.herald, options.concurrency, 1, durableVsBare.round.bare),
      note: `${busy(durableVsBare.round.herald)}; ${roundsNote(durableVsBare.ratios)}`,
    },
    {
      scenario: `ceiling: bare INSERT ... unnest of the same rows + addBulk of the same jobs, batches of ${options.ingestBatch}, 2 in flight`,
      figure: Math.round(ingestVsBare.round.bare),
      unit: 'events/s',
    },
    {
      scenario: `ingest, batches of ${options.ingestBatch}, 2 in flight, fan-out 2`,
      figure: Math.round(ingestVsBare.round.herald),
      unit: 'events/s',
      ceiling: ingestVsBare.round.bare,
      ceilingName: 'bare INSERT + addBulk',
      target: '>= 0.9',
      note: roundsNote(ingestVsBare.ratios),
    },
    {
      scenario: '1 delivery-worker, callbacks/s vs bare BullMQ + POST',
      figure: Math.round(heraldVsBare.round.herald.rate),
      unit: 'callbacks/s',
      ceiling: heraldVsBare.round.bare.rate,
      ceilingName: 'bare BullMQ + POST',
      target: '>= 0.6',
      note: `${busy(heraldVsBare.round.herald)}; ${roundsNote(heraldVsBare.ratios)}`,
      cpu: formatCpu(heraldVsBare.round.herald.cpu),
    },
    durableRows.herald(1, heraldVsDurable.round.herald, heraldVsDurable.round.durable, roundsNote(heraldVsDurable.ratios)),
    {
      ...durableRows.prioritizedCeiling(prioritizedVsDurable.round.herald, options.concurrency, prioritizedVsDurable.round.durable),
      note: `${busy(prioritizedVsDurable.round.herald)}; ${roundsNote(prioritizedVsDurable.ratios)}`,
    },
    {
      ...durableRows.heraldVsPrioritized(heraldVsPrioritized.round.herald, heraldVsPrioritized.round.prioritized),
      note: roundsNote(heraldVsPrioritized.ratios),
    },
  ];
}

/** Requests per second and latency of one autocannon run. */
export type CannonResult = Awaited<ReturnType<typeof cannon>>;

/** One round of GET /events page 1 beside its ceilings. */
export type ListRound = { herald: CannonResult; static: CannonResult; sql: CannonResult };

/**
 * GET /events page 1 (Herald), the bare Express static page of the same bytes and bare Express +
 * the same SQL, `seconds` each under autocannon's 32 connections, in `rounds` alternated rounds
 * after a second of each.
 */
export async function listRounds(
  urls: { herald: string; static: string; sql: string },
  headers: Record<string, string>,
  rounds: number,
  seconds: number,
): Promise<ListRound[]> {
  // Warm-up (JIT, pools), so that no side's first round is measured cold.
  for (const url of [urls.static, urls.sql]) await cannon(url, 1);
  await cannon(urls.herald, 1, headers);
  const results: ListRound[] = [];
  for (let round = 0; round < rounds; round += 1) {
    const result = {} as ListRound;
    await inRoundOrder(round, [
      async () => {
        result.static = await cannon(urls.static, seconds);
      },
      async () => {
        result.sql = await cannon(urls.sql, seconds);
      },
      async () => {
        result.herald = await cannon(urls.herald, seconds, headers);
      },
    ]);
    results.push(result);
  }
  return results;
}

/** The rows of the list rounds: both ceilings, and Herald's page 1 against each, from its median round. */
export function listRoundRows(results: readonly ListRound[], options: { events: number; pageBytes: number }): CeilingRow[] {
  const rps = (r: CannonResult): number => r.rps;
  const latency = (r: CannonResult): string => `p50 ${r.p50} ms, p99 ${r.p99} ms`;
  const vsStatic = medianRound(results, 'static', rps);
  const vsSql = medianRound(results, 'sql', rps);
  return [
    {
      scenario: `ceiling: bare Express static page (${options.pageBytes} bytes), 32 connections`,
      figure: Math.round(vsStatic.round.static.rps),
      unit: 'req/s',
      note: latency(vsStatic.round.static),
    },
    listSqlRows.ceiling(vsSql.round.sql),
    {
      scenario: `GET /events page 1, ${options.events} events, req/s`,
      figure: Math.round(vsStatic.round.herald.rps),
      unit: 'req/s',
      ceiling: vsStatic.round.static.rps,
      ceilingName: 'bare Express',
      target: '>= 0.4',
      note: `${latency(vsStatic.round.herald)}; ${roundsNote(vsStatic.ratios)}`,
    },
    { ...listSqlRows.herald(options.events, vsSql.round.herald, vsSql.round.sql), note: roundsNote(vsSql.ratios) },
  ];
}

export interface CeilingsSectionContext extends DeliveryRoundsContext {
  prisma: PrismaClient;
  sizes: DeliveryRoundsContext['sizes'] & { listEvents: number; listRoundSeconds: number };
  rounds: number;
  startListening: (script: string, env: Record<string, string>) => Promise<{ port: number }>;
  addRow: (row: CeilingRow) => void;
}

/**
 * `--only ceilings`: every figure that has a ratio target beside its ceilings, in alternated
 * rounds, measured as in the full run: the ingest and 1 delivery-worker draining queued payment
 * callbacks; then GET /events page 1 of a merchant key over seeded events.
 */
export async function runCeilingsSection(ctx: CeilingsSectionContext): Promise<void> {
  const delivery = await deliveryRounds(ctx, ctx.rounds);
  for (const row of deliveryRoundRows(delivery, { concurrency: ctx.concurrency, ingestBatch: ctx.sizes.ingestBatch })) ctx.addRow(row);

  const call = (method: string, route: string, body: unknown): Promise<unknown> =>
    callJson(method, `${ctx.apiUrl}${route}`, { token: ctx.adminToken, body, expect: [201] });
  await call('POST', '/admin/programs', { id: 'bench-l', name: 'list' });
  for (let m = 0; m < 4; m += 1) await call('POST', '/admin/merchants', { id: `bench-l-m${m}`, programId: 'bench-l', name: 'list' });
  const { key } = (await call('POST', '/admin/api-keys', { merchantId: 'bench-l-m0' })) as { key: string };
  ctx.log(`seeding ${ctx.sizes.listEvents} events`);
  await seedEvents(ctx.prisma, ctx.sizes.listEvents);
  const perMerchant = ctx.sizes.listEvents / 4;
  const headers = {
    'x-api-key': key,
    'content-type': 'application/json',
    'accept-language': 'en-US',
    'user-agent': 'herald-bench',
    origin: 'https://bench.example',
  };
  const pageUrl = `${ctx.apiUrl}/events?page=1&pageSize=20`;
  const { status, body: page } = await requestJson('GET', pageUrl, { headers });
  if (status !== 200 || (JSON.parse(page) as { count: number }).count !== perMerchant)
    throw new Error(`GET /events page 1 answered ${status}: ${page.slice(0, 300)}`);
  const list = await startListCeilings({ databaseUrl: ctx.databaseUrl, page, expectCount: perMerchant, startListening: ctx.startListening });
  const rounds = await listRounds({ herald: pageUrl, ...list }, headers, ctx.rounds, ctx.sizes.listRoundSeconds);
  for (const row of listRoundRows(rounds, { events: ctx.sizes.listEvents, pageBytes: page.length })) ctx.addRow(row);
}

/**
 * Starts the two ceilings of GET /events page 1 of merchant bench-l-m0: the bare Express static
 * page answering `page` (Herald's own answer), and bare Express + the same SQL. Returns their URLs.
 */
export async function startListCeilings(options: {
  databaseUrl: string;
  page: string;
  expectCount: number;
  startListening: (script: string, env: Record<string, string>) => Promise<{ port: number }>;
}): Promise<{ static: string; sql: string }> {
  const pageFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'herald-bench-')), 'page.json');
  writeFileSync(pageFile, options.page);
  const staticApp = await options.startListening('bench/bare-express.ts', { BENCH_PAGE_FILE: pageFile });
  const sql = await startBareSqlPage({
    databaseUrl: options.databaseUrl,
    query: pageOneQuery('bench-l', 'bench-l-m0'),
    expectCount: options.expectCount,
    startListening: options.startListening,
  });
  return { static: `http://127.0.0.1:${staticApp.port}/events`, sql };
}
