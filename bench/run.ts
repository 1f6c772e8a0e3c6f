/**
 * `pnpm bench [--quick] [--only <section>]`: measures Herald against this machine's own ceilings, in the same run.
 *
 * Everything runs on 127.0.0.1 with its own database (created, migrated, dropped), its own queue
 * prefix (keys deleted at the end) and its own receiver process. Every figure stands beside a
 * ceiling measured in the same run, as a ratio, because these machines are shared and noisy.
 * Writes bench/results/latest.json and prints a table. Exits 1 on an error, never on slowness.
 * `--only isolation` runs the isolation section alone (bench/isolation.ts), writing
 * bench/results/latest-isolation.json; `--only api-isolation` the API isolation section
 * (bench/api-isolation.ts), writing bench/results/latest-api-isolation.json; `--only ordering` ordered
 * delivery's throughput and head-of-line (bench/scenarios/ordering.ts); `--only receivers` a
 * receiver that answers 429 past 50 callbacks/s (bench/scenarios/receivers.ts); `--only ceilings` the
 * durable delivery and bare Express + SQL ceilings beside Herald (bench/ceilings.ts); `--only soak`
 * the soak (bench/soak.ts), which the full run ends with: `--soak-minutes N` (or BENCH_SOAK_MINUTES,
 * default 10) and BENCH_SOAK_RATE (events/s, default 150).
 * `--only tracing`: tracing's cost, 1 worker with tracing on against off in alternated rounds
 * (bench/scenarios/tracing.ts), writing bench/results/latest-tracing.json.
 * `--scale`: the scale run alone (bench/scale.ts): GET /events at 1,000,000 and 10,000,000 events
 * (BENCH_SCALE_EVENTS) and the per-row and per-request costs, writing bench/results/latest-scale.json.
 */
import { execSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MODE, ONLY, QUICK, ROOT, SCALE, SIZE, SOAK, WORKER_CONCURRENCY } from './settings';
import { apiIsolation } from './scenarios/api-isolation';
import { deliveryCeilings, rawPoster } from './scenarios/delivery-ceilings';
import { ceilingsOnly, deliveryVsCeilings } from './scenarios/delivery-rounds';
import { endToEndLatency } from './scenarios/end-to-end';
import { cleanups, log, round, serviceLogs, type Bench, type Row } from './scenarios/harness';
import { isolation } from './scenarios/isolation';
import { ordering } from './scenarios/ordering';
import { receivers } from './scenarios/receivers';
import { listEvents } from './scenarios/list-events';
import { oauthRenewal, oauthTokens } from './scenarios/oauth';
import { scale } from './scenarios/scale';
import { prepareRun, startBench } from './scenarios/setup';
import { soak } from './scenarios/soak';
import { tracingCost } from './scenarios/tracing';
import { peakRssRow, twoWorkers } from './scenarios/two-workers';

/**
 * The commit the run measures (`+uncommitted` when the tree had changes), read at the start, when
 * the services are built: a file edited while the run lasts does not mark it.
 */
const MEASURED_COMMIT = gitCommit();

/** The section `--only <section>` runs alone (api-isolation, which needs no services, is run apart). */
const SECTION_RUNS: Record<Exclude<NonNullable<typeof ONLY>, 'api-isolation'>, (bench: Bench) => Promise<Row[]>> = {
  isolation,
  ordering,
  receivers,
  soak,
  ceilings: ceilingsOnly,
  tracing: tracingCost,
};

const rows: Row[] = [];

/** Adds a scenario's rows to the table (with their ratio to their ceiling) and logs each. */
function record(scenarioRows: Row[]): void {
  for (const row of scenarioRows) {
    if (row.ceiling !== undefined && row.ceiling > 0 && row.ratio === undefined) row.ratio = round(row.figure / row.ceiling, 3);
    rows.push(row);
    log(`${row.scenario}: ${row.figure} ${row.unit}${row.ratio !== undefined ? ` (ratio ${row.ratio} of ${row.ceilingName})` : ''}`);
  }
}

/** Runs the scenarios of this run's mode, in order (one module each, in bench/scenarios/), then writes and prints the results. */
async function main(): Promise<void> {
  const runStarted = Date.now();
  const base = await prepareRun();
  if (ONLY === 'api-isolation') {
    record(await apiIsolation(base));
    return report(runStarted);
  }
  const bench = await startBench(base);
  // `--scale` or `--only <section>`: that scenario alone.
  const alone = SCALE ? scale : ONLY === undefined ? undefined : SECTION_RUNS[ONLY];
  if (alone) {
    record(await alone(bench));
    return report(runStarted);
  }

  const ceilings = await deliveryCeilings(bench);
  record(ceilings.rows);
  const rounds = await deliveryVsCeilings(bench, ceilings);
  record(rounds.rows);
  // Tracing's cost beside the plain drain, in rounds of its own.
  record(await tracingCost(bench));
  const two = await twoWorkers(bench, ceilings, rounds);
  record(two.rows);
  // The OAuth and end-to-end scenarios deliver through the 2 workers, stopped after them.
  record(await oauthTokens(bench));
  record(await oauthRenewal(bench));
  record(await endToEndLatency(bench));
  record([await peakRssRow(two, rounds)]);
  record(await isolation(bench));
  record(await ordering(bench));
  record(await receivers(bench));
  record(await listEvents(bench));
  record(await apiIsolation(base));
  // The soak: full run only.
  if (!QUICK) record(await soak(bench));
  report(runStarted);
}

/** Writes the results file and prints the table. */
function report(runStarted: number): void {
  const commit = MEASURED_COMMIT;
  const result = {
    date: new Date().toISOString(),
    mode: MODE,
    commit,
    durationSeconds: round((Date.now() - runStarted) / 1000, 1),
    machine: {
      os: `${os.type()} ${os.release()} ${os.arch()}`,
      cpus: os.cpus().map((c) => ({ model: c.model, speedMHz: c.speed })),
      cpuCount: os.cpus().length,
      totalMemoryMB: Math.round(os.totalmem() / 2 ** 20),
      freeMemoryMB: Math.round(os.freemem() / 2 ** 20),
      loadAverage: os.loadavg(),
      node: process.version,
    },
    sizes: SIZE,
    workerConcurrency: WORKER_CONCURRENCY,
    results: rows,
  };
  writeFileSync(path.join(ROOT, `bench/results/${SCALE ? 'latest-scale' : ONLY ? `latest-${ONLY}` : 'latest'}.json`), `${JSON.stringify(result, null, 2)}\n`);
  printTable(result.date, commit);
}

function gitCommit(): string {
  try {
    const head = execSync('git rev-parse --short HEAD', { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execSync('git status --porcelain', { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
    return dirty ? `${head}+uncommitted` : head;
  } catch {
    return 'unknown';
  }
}

function printTable(date: string, commit: string): void {
  const lines = rows.map((r) => [
    r.scenario,
    `${r.figure} ${r.unit}`,
    r.ratio !== undefined ? `${r.ratio} of ${r.ceilingName}` : '',
    r.target ?? '',
    r.note ?? '',
  ]);
  const head = ['scenario', 'figure', 'ratio', 'target', 'note'];
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(`Herald bench (${MODE}), ${date}, commit ${commit}, ${os.cpus().length} cpus, node ${process.version}`);
  console.log(fmt(head));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const l of lines) console.log(fmt(l));
}

async function cleanup(): Promise<void> {
  rawPoster.close();
  // In reverse: processes first, then Redis keys and the database they used.
  for (const fn of cleanups.reverse()) {
    try {
      await fn();
    } catch (error) {
      log(`cleanup: ${(error as Error).message}`);
    }
  }
  cleanups.length = 0;
}

let interrupted = false;
// Whatever escapes main() still stops the processes and drops the database before exiting.
for (const event of ['unhandledRejection', 'uncaughtException'] as const) {
  process.once(event, (error: unknown) => {
    log(`FAILED (${event}): ${(error as Error)?.stack ?? String(error)}`);
    void cleanup().finally(() => process.exit(1));
  });
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    log(`${signal}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}
// The whole run is bounded: a hang past this fails the run (after cleaning up).
const watchdog = setTimeout(
  () => {
    log('run exceeded its time limit');
    void cleanup().finally(() => process.exit(1));
  },
  SCALE ? 45 * 60_000 : (QUICK ? 9 * 60_000 : 20 * 60_000) + (ONLY === 'soak' || (!QUICK && ONLY === undefined) ? SOAK.seconds * 1000 + 3 * 60_000 : 0),
);

main()
  .then(async () => {
    await cleanup();
    clearTimeout(watchdog);
    process.exit(0);
  })
  .catch(async (error: unknown) => {
    if (interrupted) return;
    log(`FAILED: ${(error as Error).stack ?? String(error)}`);
    for (const [name, proc] of serviceLogs) {
      const errors = proc
        .output()
        .split('\n')
        .filter((line) => /"level":"error"/.test(line))
        .slice(-5);
      if (errors.length > 0) log(`${name} errors:\n${errors.join('\n')}`);
    }
    await cleanup();
    clearTimeout(watchdog);
    process.exit(1);
  });
