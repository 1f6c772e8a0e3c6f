import { applyMigrations, ensureDatabase } from '@herald/db';
import { createPrismaClient } from '@herald/db/prisma';
import { lastRead, startHttpRecorder, waitFor, type HttpRecorder } from '@herald/testing';
import { startPrivateCluster, type PrivateCluster } from './support/postgres-cluster';
import { report } from './support/report';
import { isProblem, newEvents, System, type Timed } from './support/system';

// Scenario 3: PostgreSQL (a private cluster) is stopped under a running events-api and worker.
// GET /events and ingest must answer 503 problem+json within a bound, no process may crash, the
// worker's jobs fail and are retried, and everything recovers once PostgreSQL is back.

const EVENTS = 100;
const OUTAGE_MS = 8_000;
const ANSWER_BOUND_MS = 5_000;

let cluster: PrivateCluster;
let system: System;
let receiver: HttpRecorder;
beforeAll(async () => {
  cluster = await startPrivateCluster();
  await ensureDatabase(cluster.url('herald'));
  await applyMigrations(cluster.url('herald'));
});
afterAll(async () => {
  await system?.close();
  await receiver?.close();
  cluster?.remove();
});

it('answers 503 problem+json while PostgreSQL is down, retries the jobs, and recovers when it returns', async () => {
  receiver = await startHttpRecorder(() => ({ status: 500 }));
  system = new System('3-postgres-down', cluster.url('herald'), 'redis://127.0.0.1:6379', {
    DELIVERY_ATTEMPTS: '25',
    DELIVERY_BACKOFF_MS: '250',
    DELIVERY_BACKOFF_JITTER: '0',
  });
  await system.startApi();
  const worker = await system.startWorker();
  const tenant = await system.createTenant(`${receiver.origin}/hook`);
  const started = Date.now();

  let accepted = 0;
  for (let i = 0; i < EVENTS; i += 20) {
    const answer = await system.ingest(newEvents(tenant, 20, `before-${i}`));
    if (answer.status === 201) accepted += 20;
  }
  // Every callback has been tried once and failed (500): the jobs are waiting for their retry.
  await waitFor(
    () => new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size,
    (tried) => tried >= accepted,
    30_000,
    'a first try of every callback',
    100,
  ).catch(lastRead);

  cluster.stop();
  receiver.respondWith(() => ({ status: 200 }));
  const receivedAtStop = receiver.requests.length;
  const during: Timed[] = [];
  const outageEnd = Date.now() + OUTAGE_MS;
  while (Date.now() < outageEnd) {
    const [list, ingest] = await Promise.all([
      system.listEvents(tenant.key, '', 20_000),
      system.ingest(newEvents(tenant, 5, `during-${during.length}`), 20_000),
    ]);
    during.push(list, ingest);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const callbacksDuringOutage = receiver.requests.length - receivedAtStop;
  const workerLogsDuringOutage = worker
    .output()
    .split('\n')
    .filter((line) => /attempt failed|job failed|database|unavailable/i.test(line)).length;
  const aliveDuringOutage = system.services.every((service) => service.child.exitCode === null);

  cluster.start();
  const recoveryStarted = Date.now();
  const after = await waitFor(
    () => system.listEvents(tenant.key),
    (answer) => answer.status === 200,
    30_000,
    'GET /events to answer 200 again',
    250,
  ).catch(lastRead<Timed>);
  const apiRecoveredMs = Date.now() - recoveryStarted;
  const afterIngest = await system.ingest(newEvents(tenant, 5, 'after'));
  if (afterIngest.status === 201) accepted += 5;

  const prisma = createPrismaClient(cluster.url('herald'));
  let succeeded = 0;
  try {
    succeeded = await waitFor(
      () => prisma.delivery.count({ where: { status: 'succeeded' } }),
      (n) => n >= accepted,
      60_000,
      'every accepted event delivered',
      250,
    ).catch(lastRead<number>);
  } finally {
    await prisma.$disconnect();
  }
  const distinct = new Set(receiver.requests.filter((_request, i) => i >= receivedAtStop).map((r) => r.headers['webhook-id'])).size;

  const byStatus: Record<string, number> = {};
  for (const answer of during) byStatus[answer.status] = (byStatus[answer.status] ?? 0) + 1;
  const notProblem503 = during.filter((answer) => !isProblem(answer, 503)).length;
  const slowest = Math.max(...during.map((answer) => answer.ms));
  report(
    '3. PostgreSQL stopped',
    `${EVENTS} events ingested, first callbacks failed (500) so their jobs wait for a retry; private PostgreSQL stopped for ${OUTAGE_MS / 1000} s while GET /events and ingest were called every 250 ms; then started again`,
    {
      'events accepted': accepted,
      'requests tried during the outage': during.length,
      'answers during the outage by status': byStatus,
      'answers not a 503 problem+json': notProblem503,
      'slowest answer during the outage (ms)': slowest,
      'callbacks sent during the outage': callbacksDuringOutage,
      'worker log lines matching failed/database/unavailable': workerLogsDuringOutage,
      'processes alive through the outage': aliveDuringOutage,
      'GET /events back to 200 after restart (ms)': apiRecoveredMs,
      'ingest after restart': afterIngest.status,
      delivered: succeeded,
      'distinct events called back after the stop': distinct,
      // Callbacks sent just before or during the outage whose outcome could not be recorded are sent again.
      duplicates: receiver.requests.length - receivedAtStop - distinct,
      '5xx other than 503': during.filter((answer) => answer.status >= 500 && answer.status !== 503).length,
      seconds: ((Date.now() - started) / 1000).toFixed(1),
    },
  );
  expect(notProblem503).toBe(0);
  expect(slowest).toBeLessThan(ANSWER_BOUND_MS);
  expect(aliveDuringOutage).toBe(true);
  expect(after?.status).toBe(200);
  expect(afterIngest.status).toBe(201);
  expect(succeeded).toBe(accepted);
});
