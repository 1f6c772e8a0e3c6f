import { testDatabaseUrl } from '@herald/config';
import { waitFor } from '@herald/testing';
import { isDatabaseUnavailable, isStatementCancelled } from '../src/database-errors';
import { closeDatabasePool, createDatabasePool, pingDatabase } from '../src/pool';
import { createPrismaClient, sqlPool } from '../src/prisma-client';

describe('createDatabasePool', () => {
  it('plans prepared statements once per connection when asked (generic plans), and as PostgreSQL chooses otherwise', async () => {
    const generic = createDatabasePool(testDatabaseUrl(), { genericPlans: true });
    const chosen = createDatabasePool(testDatabaseUrl());
    try {
      expect((await generic.query('SHOW plan_cache_mode')).rows[0]).toEqual({ plan_cache_mode: 'force_generic_plan' });
      expect((await chosen.query('SHOW plan_cache_mode')).rows[0]).toEqual({ plan_cache_mode: 'auto' });
    } finally {
      await Promise.all([closeDatabasePool(generic), closeDatabasePool(chosen)]);
    }
  });

  it('runs every statement on one core when asked (no parallel workers), with both kinds of plan setting', async () => {
    const single = createDatabasePool(testDatabaseUrl(), { noParallelWorkers: true, genericPlans: true });
    const chosen = createDatabasePool(testDatabaseUrl());
    try {
      const read =
        "SELECT current_setting('max_parallel_workers_per_gather') AS workers, current_setting('plan_cache_mode') AS plans, current_setting('jit') AS jit";
      expect((await single.query(read)).rows[0]).toEqual({ workers: '0', plans: 'force_generic_plan', jit: 'off' });
      expect((await chosen.query(read)).rows[0]).toEqual({ workers: expect.not.stringMatching(/^0$/), plans: 'auto', jit: 'off' });
    } finally {
      await Promise.all([closeDatabasePool(single), closeDatabasePool(chosen)]);
    }
  });

  it('never JIT-compiles a statement, even one PostgreSQL estimates as expensive', async () => {
    // A generic plan of `id = ANY($1)` over a large table is estimated at thousands of rows, over
    // jit_above_cost: JIT then cost the worker's 16-row batch load 120 ms of compilation each time.
    const pool = createDatabasePool(testDatabaseUrl(), { genericPlans: true });
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SET LOCAL jit_above_cost = 0');
      const explained = await client.query<{ 'QUERY PLAN': Array<Record<string, unknown>> }>(
        'EXPLAIN (ANALYZE, FORMAT JSON) SELECT sum(x) FROM generate_series(1, 1000) AS x',
      );
      expect(explained.rows[0]!['QUERY PLAN'][0]).not.toHaveProperty('JIT');
      await client.query('ROLLBACK');
    } finally {
      client.release();
      await closeDatabasePool(pool);
    }
  });

  it('has PostgreSQL cancel a statement of its pool that runs longer, and names its connections', async () => {
    const pool = createDatabasePool(testDatabaseUrl(), { statementTimeoutMs: 200, applicationName: 'herald-test:limited' });
    try {
      const settings = await pool.query<{ timeout: string; name: string }>(
        "SELECT current_setting('statement_timeout') AS timeout, current_setting('application_name') AS name",
      );
      expect(settings.rows[0]).toEqual({ timeout: '200ms', name: 'herald-test:limited' });
      const error = await pool.query('SELECT pg_sleep(5)').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isStatementCancelled(error)).toBe(true);
      expect(isDatabaseUnavailable(error)).toBe(false);
      // The connection stays usable after the cancellation.
      await expect(pool.query('SELECT 1 AS one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
    } finally {
      await closeDatabasePool(pool);
    }
  });

  it('has PostgreSQL end a transaction of its pool left idle longer, releasing its locks, when asked', async () => {
    const pool = createDatabasePool(testDatabaseUrl(), { idleInTransactionTimeoutMs: 200 });
    const other = createDatabasePool(testDatabaseUrl());
    const key = Math.floor(Math.random() * 1_000_000_000);
    const client = await pool.connect();
    let broken: Error | undefined;
    try {
      const { pid } = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!;
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [key]);
      const sessions = async (): Promise<number> =>
        (await other.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', [pid])).rows[0]!.n;
      await waitFor(sessions, (n) => n === 0, 5_000, 'PostgreSQL to end the idle transaction and its session');
      // The session is gone with its transaction: another connection takes the lock at once.
      expect((await other.query<{ taken: boolean }>('SELECT pg_try_advisory_lock($1) AS taken', [key])).rows[0]).toEqual({ taken: true });
      broken = await client.query('SELECT 1').then(
        () => undefined,
        (error: Error) => error,
      );
      expect(isDatabaseUnavailable(broken)).toBe(true);
    } finally {
      client.release(broken ?? true);
      await other.query('SELECT pg_advisory_unlock_all()');
      await Promise.all([closeDatabasePool(pool), closeDatabasePool(other)]);
    }
  });

  it('opens at most maxConnections connections', async () => {
    const pool = createDatabasePool(testDatabaseUrl(), { maxConnections: 2, applicationName: 'herald-test:two' });
    try {
      await Promise.all(Array.from({ length: 6 }, () => pool.query('SELECT pg_sleep(0.05)')));
      expect(pool.totalCount).toBe(2);
    } finally {
      await closeDatabasePool(pool);
    }
  });

  it('is closed once by closeDatabasePool, however often it is called', async () => {
    const pool = createDatabasePool(testDatabaseUrl());
    await pingDatabase(pool);
    await closeDatabasePool(pool);
    await expect(closeDatabasePool(pool)).resolves.toBeUndefined();
    expect(pool.ended).toBe(true);
    await expect(pingDatabase(pool)).rejects.toThrow();
  });
});

describe('createPrismaClient (tests and tools only)', () => {
  it('ends its pool on $disconnect even when no Prisma query ever ran', async () => {
    const prisma = createPrismaClient(testDatabaseUrl());
    const pool = sqlPool(prisma);
    await pool.query('SELECT 1');
    await prisma.$disconnect();
    expect(pool.ended).toBe(true);
  });

  it('ends its pool once when Prisma queries ran too', async () => {
    const prisma = createPrismaClient(testDatabaseUrl());
    const pool = sqlPool(prisma);
    await prisma.$queryRaw`SELECT 1`;
    await pool.query('SELECT 1');
    await expect(prisma.$disconnect()).resolves.toBeUndefined();
    expect(pool.ended).toBe(true);
  });
});
