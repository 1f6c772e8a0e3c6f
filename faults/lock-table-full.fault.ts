import { applyMigrations, ensureDatabase } from '@herald/db';
import { Client } from 'pg';
import { startPrivateCluster, type PrivateCluster } from './support/postgres-cluster';
import { report } from './support/report';
import { isProblem, newEvents, System } from './support/system';

// PostgreSQL's shared lock table runs full. A private cluster has a small one
// (max_locks_per_transaction 10, max_connections 20: room for a few hundred locks), and another
// client of the server fills it by holding advisory locks. An ingest then cannot take its locks:
// it must answer 503 problem+json (retry later: nothing was stored), and the events-api must stay
// up. Once the other client lets go, a batch of 1,000 events is stored whole in that small table:
// an ingest holds one advisory lock, not one per event (docs/data-retention.md).

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

/**
 * Takes advisory locks in one transaction until the lock table has no room for one more, each
 * chunk under a savepoint so that the chunk that fails gives back only its own locks; returns how
 * many it holds. The caller ends the transaction to release them.
 */
async function fillLockTable(client: Client): Promise<number> {
  await client.query('BEGIN');
  let held = 0;
  for (const chunk of [100, 10, 1]) {
    for (;;) {
      await client.query('SAVEPOINT chunk');
      try {
        await client.query('SELECT pg_advisory_xact_lock(7, g) FROM generate_series($1::int, $2::int) AS g', [held + 1, held + chunk]);
        held += chunk;
      } catch {
        await client.query('ROLLBACK TO SAVEPOINT chunk');
        break;
      }
    }
  }
  return held;
}

it('answers 503 problem+json, stores nothing and stays up while the lock table is full, then stores a batch of 1,000 in that small table', async () => {
  system = new System('lock-table-full', cluster.url('herald'), 'redis://127.0.0.1:6379');
  await system.startApi({ INGEST_POOL_SIZE: '2' });
  const tenant = await system.createTenant('http://127.0.0.1:9/hook');

  const other = new Client({ connectionString: cluster.url('herald') });
  await other.connect();
  let filled: number;
  let full: Awaited<ReturnType<System['ingest']>>;
  try {
    filled = await fillLockTable(other);
    full = await system.ingest(newEvents(tenant, 20, 'full'));
  } finally {
    await other.query('ROLLBACK').catch(() => undefined);
    await other.end();
  }
  const apiAlive = system.api!.child.exitCode === null;
  const stored = await system.ingest(newEvents(tenant, 1_000, 'after'));
  const listed = await system.listEvents(tenant.key);
  const count = listed.status === 200 ? (JSON.parse(listed.body) as { count: number }).count : -1;

  report(
    'lock table full',
    'another client fills a small lock table (room for a few hundred locks), a batch of 20 is ingested; the client lets go, a batch of 1,000 is ingested',
    {
      'locks the other client took': filled,
      'batch of 20 while full': `${full.status} ${full.contentType} ${full.body.slice(0, 300)}`,
      'events-api alive': apiAlive,
      'batch of 1,000 after': stored.status,
      'events listed': count,
    },
  );
  expect(filled).toBeGreaterThan(100);
  expect(isProblem(full, 503)).toBe(true);
  expect(apiAlive).toBe(true);
  expect(stored.status).toBe(201);
  expect(count).toBe(1_000);
});
