/**
 * The settings of a `pnpm bench` run, from its flags and environment (see bench/run.ts): read once,
 * when bench/run.ts starts; a bad value ends the run at once, naming the flag or variable.
 */
import path from 'node:path';

export const QUICK = process.argv.includes('--quick');
const SECTIONS = ['isolation', 'api-isolation', 'ceilings', 'soak', 'ordering', 'tracing', 'receivers'] as const;
/** `--only <section>`: run that section alone. */
export const ONLY = ((): (typeof SECTIONS)[number] | undefined => {
  const at = process.argv.indexOf('--only');
  if (at === -1) return undefined;
  const section = process.argv[at + 1];
  if (!SECTIONS.includes(section as (typeof SECTIONS)[number])) {
    console.error(`--only takes one of: ${SECTIONS.join(', ')}`);
    process.exit(2);
  }
  return section as (typeof SECTIONS)[number];
})();
/** `--scale`: the scale run alone. */
export const SCALE = process.argv.includes('--scale');
export const SCALE_EVENTS = Number(process.env.BENCH_SCALE_EVENTS ?? 10_000_000);
if (SCALE && !(Number.isInteger(SCALE_EVENTS) && SCALE_EVENTS >= 100_000)) {
  console.error('BENCH_SCALE_EVENTS must be an integer of at least 100000');
  process.exit(2);
}
/** What this run is, in the results file's name and the table's title. */
export const MODE = SCALE ? 'scale' : `${QUICK ? 'quick' : 'full'}${ONLY ? `, ${ONLY} only` : ''}`;
export const ROOT = path.resolve(__dirname, '..');
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const ADMIN_TOKEN = 'dev-admin-token';
export const INGEST_TOKEN = 'dev-ingest-token';
export const WORKER_CONCURRENCY = 16;
/** The soak: how long (`--soak-minutes N` or BENCH_SOAK_MINUTES) and how many events per second (BENCH_SOAK_RATE). */
const SOAK_MINUTES_FLAG = process.argv.indexOf('--soak-minutes');
export const SOAK = {
  seconds: Math.round(60 * Number(SOAK_MINUTES_FLAG === -1 ? (process.env.BENCH_SOAK_MINUTES ?? 10) : process.argv[SOAK_MINUTES_FLAG + 1])),
  rate: Number(process.env.BENCH_SOAK_RATE ?? 150),
};
if (!(SOAK.seconds >= 30 && SOAK.rate > 0)) {
  console.error('--soak-minutes (BENCH_SOAK_MINUTES) must be at least 0.5 and BENCH_SOAK_RATE a positive number');
  process.exit(2);
}

/** Sizes of each scenario: every loop is bounded in count and in time. */
export const SIZE = QUICK
  ? {
      ingestEvents: 1_000,
      ingestBatch: 250,
      rawPosts: 3_000,
      bareJobs: 3_000,
      listEvents: 20_000,
      deepPage: 200,
      listSeconds: 3,
      rounds: 2,
      listRoundSeconds: 3,
      oauthEvents: 500,
      renewalLifetime: 2,
      renewalSeconds: 5,
      renewalRate: 40,
      e2eRate: 40,
      e2eSeconds: 3,
    }
  : {
      ingestEvents: 15_000,
      ingestBatch: 500,
      rawPosts: 40_000,
      bareJobs: 30_000,
      listEvents: 1_000_000,
      deepPage: 10_000,
      listSeconds: 10,
      rounds: 3,
      listRoundSeconds: 5,
      oauthEvents: 10_000,
      renewalLifetime: 10,
      renewalSeconds: 30,
      renewalRate: 100,
      e2eRate: 100,
      e2eSeconds: 15,
    };
/** Longest any wait for deliveries may take before the run fails. */
export const DRAIN_TIMEOUT_MS = QUICK ? 60_000 : 180_000;
