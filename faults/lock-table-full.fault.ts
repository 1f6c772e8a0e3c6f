import { applyMigrations, ensureDatabase } from '@herald/db';
import { startPrivateCluster, type PrivateCluster } from './support/postgres-cluster';
import { report } from './support/report';
import { isProblem, newEvents, System } from './support/system';

// PostgreSQL's shared lock table runs full: an ingest holds one advisory lock per event of its
// batch until it commits (docs/data-retention.md), and a private cluster with a small table
// (max_locks_per_transaction 10, max_connections 20: room for a few hundred locks) cannot hold a
// batch of 1,000. The ingest must answer 503 problem+json (retry later: nothing was stored), the
// events-api must stay up, and a smaller batch must then be stored whole.

let cluster: PrivateCluster;
let system: System;
beforeAll(async () => {
  cluster = await startPrivateCluster({ max_locks_per_transaction: '10', max_connections: '20' });
  await ensureDatabase(cluster.url('herald'));
  await applyMigrations(cluster.url('herald'));
});
afterAll(async () => {
  await system?.close();
  cluster?.remove();
});

it('answers 503 problem+json, stores nothing of the batch and stays up when the lock table is full, then stores the next batch', async () => {
  system = new System('lock-table-full', cluster.url('herald'), 'redis://127.0.0.1:6379');
  await system.startApi({ INGEST_POOL_SIZE: '2' });
  const tenant = await system.createTenant('http://127.0.0.1:9/hook');

  const full = await system.ingest(newEvents(tenant, 1_000, 'full'));
  const apiAlive = system.api!.child.exitCode === null;
  const stored = await system.ingest(newEvents(tenant, 20, 'after'));
  const listed = await system.listEvents(tenant.key);
  const count = listed.status === 200 ? (JSON.parse(listed.body) as { count: number }).count : -1;

  report('lock table full', 'one batch of 1,000 events into a lock table with room for a few hundred locks, then one of 20', {
    'batch of 1,000': `${full.status} ${full.contentType} ${full.body.slice(0, 300)}`,
    'events-api alive': apiAlive,
    'next batch of 20': stored.status,
    'events listed': count,
  });
  expect(isProblem(full, 503)).toBe(true);
  expect(apiAlive).toBe(true);
  expect(stored.status).toBe(201);
  expect(count).toBe(20);
});
