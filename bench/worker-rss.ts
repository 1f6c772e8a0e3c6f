/**
 * The delivery-worker's memory as production runs it (the bundle of `pnpm build`, with
 * --enable-source-maps), quicker to repeat than `pnpm bench`:
 *
 *   node --import tsx bench/worker-rss.ts [--events 10000] [--no-source-maps] [--node-flags '--max-semi-space-size=4 --trace-gc'] [--skip-build]
 *
 * Starts one worker (default settings, production's node options) on a scratch database and queue, reads its RSS once it has
 * been ready and idle for 3 s, then ingests payment events (fan-out 2) through the events-api while
 * it delivers them to bench/receiver.ts, and prints its RSS after the last callback and its peak
 * (VmHWM). Leaves no database and no Redis key behind.
 */
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { applyMigrations, dropDatabase, ensureDatabase } from '@herald/db';
import { callJson, databaseUrlFor, uniqueId, waitFor } from '@herald/testing';
import { DEV_PAYMENT_LOAD, ingestBatches } from './ingest-load';
import { buildServices, createPaymentTenant, serviceEnv, startService } from './setup';
import { BUILD_ENTRIES } from '../scripts/bundles';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
/** A field of /proc/<pid>/status (VmRSS, VmHWM), in MB. */
const status = (pid: number, field: string): number =>
  Math.round(Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);
/** CPU time the process has used (user + system), in ms: what a flag that trades memory for GC work costs. */
const cpuMs = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
};

async function main(): Promise<void> {
  if (!process.argv.includes('--skip-build')) await buildServices();
  const id = uniqueId('rss').toLowerCase();
  const databaseUrl = databaseUrlFor(`herald_leanworker_${id}`);
  const queuePrefix = `herald_${id}`;
  await ensureDatabase(databaseUrl);
  await applyMigrations(databaseUrl);
  const env = serviceEnv({ databaseUrl, redisUrl: REDIS_URL, queuePrefix });
  const api = startService('services/events-api/src/server.ts', { ...env, PORT: '0' });
  const receiver = startService('bench/receiver.ts', {});
  // Production's options (scripts/bundles.ts), then --node-flags: a V8 flag given twice takes its last value.
  const production = BUILD_ENTRIES.worker.node.filter((flag) => !(flag === '--enable-source-maps' && process.argv.includes('--no-source-maps')));
  const flags = [...production, ...arg('node-flags', '').split(' ').filter(Boolean)];
  const service = startService('services/delivery-worker/src/main.ts', env, { nodeOptions: flags });
  const worker = service.child;
  try {
    const apiUrl = `http://127.0.0.1:${Number((await api.waitForLog(/listening/, 30_000)).port)}`;
    const receiverUrl = `http://127.0.0.1:${Number((await receiver.waitForLog(/listening/, 30_000)).port)}`;
    await createPaymentTenant(apiUrl, 'dev-admin-token', `${receiverUrl}/hook`);
    await service.waitForLog('delivery-worker ready', 30_000);
    // Not a wait for an event: the idle figure is read after 3 s of idling, as this script always has.
    await new Promise((r) => setTimeout(r, 3000));
    const idle = status(worker.pid!, 'VmRSS');
    const cpuBefore = cpuMs(worker.pid!);
    const gcFrom = service.output().length;
    const events = Number(arg('events', '10000'));
    await ingestBatches({
      ...DEV_PAYMENT_LOAD,
      apiUrl,
      count: events,
    });
    await waitFor(
      async () => (await callJson<{ callbacks: number }>('GET', `${receiverUrl}/stats`)).callbacks,
      (callbacks) => callbacks >= 2 * events,
      300_000,
      `${2 * events} callbacks`,
      100,
    );
    const cpuPerCallback = Math.round(((cpuMs(worker.pid!) - cpuBefore) * 1000) / (2 * events));
    // With --node-flags --trace-gc: the time V8 spent in collections while it delivered (main thread pauses).
    const pauses = [
      ...service
        .output()
        .slice(gcFrom)
        .matchAll(/: (Scavenge|Mark-Compact|Mark-sweep)\b.*?-> [\d.]+ \(([\d.]+)\) MB, ([\d.]+) \/ [\d.]+ ms/g),
    ];
    if (pauses.length > 0) {
      const total = (kind: string) => pauses.filter((p) => p[1]!.startsWith(kind)).reduce((sum, p) => sum + Number(p[3]), 0);
      const heapMax = Math.max(...pauses.map((p) => Number(p[2])));
      console.log(
        `GC while delivering: ${pauses.length} collections, scavenges ${Math.round(total('Scavenge'))} ms, mark-compacts ${Math.round(total('Mark'))} ms (pauses, wall clock), ${Math.round(((total('Scavenge') + total('Mark')) * 1000) / (2 * events))} µs per callback; largest heap after a collection ${heapMax} MB`,
      );
    }
    // The after-load figure, likewise, 3 s after the last callback.
    await new Promise((r) => setTimeout(r, 3000));
    console.log(
      `worker ${flags.join(' ') || '(no flags)'}: idle RSS ${idle} MB, after load RSS ${status(worker.pid!, 'VmRSS')} MB, peak RSS (VmHWM) ${status(worker.pid!, 'VmHWM')} MB, ${2 * events} callbacks, worker CPU ${cpuPerCallback} µs per callback`,
    );
  } finally {
    await service.stop('SIGTERM', 15_000);
    await api.stop('SIGTERM', 15_000);
    await receiver.stop('SIGTERM', 5_000);
    const redis = new Redis(REDIS_URL);
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${queuePrefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
    redis.disconnect();
    await dropDatabase(databaseUrl);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
