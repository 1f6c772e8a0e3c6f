/**
 * The bundles of the production build (`pnpm build`, scripts/build.ts) and the node options each
 * runs with: the one place that says how production starts a process. scripts/start.sh
 * (`pnpm start:prod`) and docker-compose.yml spell the same command lines (a test compares them
 * with this file), the tests and the bench start bundles through `nodeOptionsOf`. No dependency,
 * so that the tests can read it without loading esbuild.
 */

/** Stack traces name the TypeScript files and lines. */
const SOURCE_MAPS = '--enable-source-maps';

/**
 * The delivery-worker's V8 heap, sized for a process whose live heap stays near 22 MB while it
 * allocates about 130 KB per callback (bench/worker-rss.ts, production build, 20,000 callbacks):
 *
 * - `--max-semi-space-size=8`: the young generation stops at 2 x 8 MB instead of 2 x 16 MB, and
 *   V8's old-generation limit, which adds the young generation's capacity, comes down as much.
 *   16 MB less RSS in steady delivery; scavenges are twice as frequent, each as short (they copy
 *   the callbacks in flight, not the garbage).
 * - `--heap-growing-percent=50`: after a full collection the old generation may grow by half of
 *   what survived, where V8 lets a fast-allocating heap grow up to 4 times. It must be given at
 *   start: set from inside the process (v8.setFlagsFromString) it came after the collection
 *   during start-up, whose limit let the old generation reach 52 MB in the first burst of work.
 *
 * Measured together: peak RSS (VmHWM) 110 MB against 143 MB with neither, 125 MB with the second
 * alone. The cost: scavenge pauses 72 µs per callback instead of 44, with no throughput change
 * measurable (bench/profile.ts deliver --build, 4 runs of each alternated: 1,126 callbacks/s
 * against 1,085). Unlike a --max-old-space-size cap, an event of several megabytes still fits.
 */
const WORKER_HEAP = ['--max-semi-space-size=8', '--heap-growing-percent=50'];

/** What the build makes: each entry point's source file, its bundle (from the repository root) and the node options it runs with. */
export const BUILD_ENTRIES = {
  api: { source: 'services/events-api/src/server.ts', bundle: 'services/events-api/dist/server.js', node: [SOURCE_MAPS] },
  worker: { source: 'services/delivery-worker/src/main.ts', bundle: 'services/delivery-worker/dist/main.js', node: [SOURCE_MAPS, ...WORKER_HEAP] },
  cli: { source: 'services/events-api/src/cli/herald.ts', bundle: 'services/events-api/dist/herald.js', node: [SOURCE_MAPS] },
  migrate: { source: 'packages/db/src/cli/migrate.ts', bundle: 'packages/db/dist/migrate.js', node: [SOURCE_MAPS] },
  reencryptCredentials: { source: 'packages/db/src/cli/reencrypt-credentials.ts', bundle: 'packages/db/dist/reencrypt-credentials.js', node: [SOURCE_MAPS] },
} as const satisfies Record<string, { source: string; bundle: string; node: readonly string[] }>;

export type BuildEntry = keyof typeof BUILD_ENTRIES;

/** The bundle built from `source` (a path from the repository root), or undefined when none is. */
export function bundleOf(source: string): string | undefined {
  return Object.values(BUILD_ENTRIES).find((entry) => entry.source === source)?.bundle;
}

/** The node options production runs `bundle` (a path from the repository root) with; throws for a file that is no bundle. */
export function nodeOptionsOf(bundle: string): readonly string[] {
  const entry = Object.values(BUILD_ENTRIES).find((candidate) => candidate.bundle === bundle);
  if (entry === undefined) throw new Error(`${bundle} is not a bundle of the production build (scripts/bundles.ts)`);
  return entry.node;
}
