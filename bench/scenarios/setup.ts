/** What a bench run sets up before its scenarios: the database and prefixes (prepareRun), then the receiver, the events-api and the tenants (startBench). */
import { applyMigrations, dropDatabase, ensureDatabase } from '@herald/db';
import { createPrismaClient, type PrismaClient } from '@herald/db/prisma';
import { databaseUrlFor, uniqueId } from '@herald/testing';
import { CpuAccounts } from '../cpu';
import { ADMIN_TOKEN, MODE, REDIS_URL, WORKER_CONCURRENCY } from '../settings';
import { buildServices, createPaymentTenant, serviceEnv } from '../setup';
import { cleanups, deleteRedisKeys, log, receiverClient, receiverDrain, serviceLogs, startListening, type Bench, type BenchBase } from './harness';
import { createOauthTenant } from './oauth';

/** A fresh database (migrated) and queue prefixes, all removed by the run's cleanup; the services built. */
export async function prepareRun(): Promise<BenchBase> {
  const id = uniqueId('bench').toLowerCase();
  const databaseUrl = databaseUrlFor(`herald_${id}`);
  const queuePrefix = `herald_${id}`;
  const barePrefix = `${queuePrefix}_bare`;
  log(`${MODE} run: database herald_${id}, queue prefix ${queuePrefix}`);
  // The services run from the production build (see startService in ../setup).
  await buildServices();

  await ensureDatabase(databaseUrl);
  cleanups.push(() => dropDatabase(databaseUrl));
  cleanups.push(() => deleteRedisKeys(queuePrefix));
  cleanups.push(() => deleteRedisKeys(barePrefix));
  await applyMigrations(databaseUrl);
  const prisma: PrismaClient = createPrismaClient(databaseUrl, { maxConnections: 2 });
  cleanups.push(() => prisma.$disconnect());
  return { id, databaseUrl, queuePrefix, barePrefix, prisma };
}

/**
 * The receiver and the events-api, and the tenants: P/M with a program target and a merchant
 * target (fan-out 2 for payments); O with an OAuth program target. (L, for the list scenario, has
 * no target and no deliveries: that scenario makes it.)
 */
export async function startBench(base: BenchBase): Promise<Bench> {
  const receiver = await startListening('bench/receiver.ts', {});
  const receiverUrl = `http://127.0.0.1:${receiver.port}`;
  const env = {
    ...serviceEnv({ databaseUrl: base.databaseUrl, redisUrl: REDIS_URL, queuePrefix: base.queuePrefix }),
    WORKER_CONCURRENCY: String(WORKER_CONCURRENCY),
  };
  const api = await startListening('services/events-api/src/server.ts', { ...env, PORT: '0' });
  serviceLogs.push(['events-api', api.proc]);
  const apiUrl = `http://127.0.0.1:${api.port}`;
  const { stats, reset } = receiverClient(receiverUrl);
  const cpu = new CpuAccounts(`herald_${base.id}`);
  const bench: Bench = { ...base, apiUrl, receiverUrl, env, cpu, stats, reset, drain: receiverDrain(cpu, stats) };

  await createPaymentTenant(apiUrl, ADMIN_TOKEN, `${receiverUrl}/hook`);
  await createOauthTenant(bench);
  cpu.add(receiver.proc.child.pid, 'receiver');
  cpu.add(api.proc.child.pid, 'events-api');
  return bench;
}
