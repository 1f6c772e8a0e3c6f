import { randomBytes } from 'node:crypto';
import { testDatabaseUrl } from '@herald/config';
import { CompiledQuery, type Compilable } from 'kysely';
import { closeDatabasePool, createDatabasePool, type DatabasePool } from '../src/pool';
import { inOrder, inTransaction, run } from '../src/sql';

const statement = (text: string, parameters: unknown[] = []): Compilable<unknown> => ({ compile: () => CompiledQuery.raw(text, parameters) });

describe.each([
  ['a pipelining pool', true],
  ['a pool that does not pipeline', false],
])('inTransaction on %s', (_name, pipeline) => {
  let pool: DatabasePool;
  const table = `tx_test_${randomBytes(6).toString('hex')}`;
  const insert = (id: string) => statement(`INSERT INTO ${table} (id) VALUES ($1)`, [id]);
  const stored = async () => (await pool.query(`SELECT id FROM ${table} ORDER BY id`)).rows.map((r: { id: string }) => r.id);

  beforeAll(async () => {
    pool = createDatabasePool(testDatabaseUrl(), { maxConnections: 2, pipeline });
    await pool.query(`CREATE TABLE ${table} (id text PRIMARY KEY)`);
  });
  afterAll(async () => {
    await pool.query(`DROP TABLE IF EXISTS ${table}`);
    await closeDatabasePool(pool);
  });
  beforeEach(() => pool.query(`TRUNCATE ${table}`));

  it('commits the last statements together with the work', async () => {
    const result = await inTransaction(pool, async (sql) => (await run(sql, insert('a'))).rowCount, { last: () => [insert('b'), insert('c')] });
    expect(result).toBe(1);
    expect(await stored()).toEqual(['a', 'b', 'c']);
  });

  it('rejects and stores nothing when a last statement fails, and its connection serves the next transaction', async () => {
    await expect(inTransaction(pool, (sql) => run(sql, insert('a')), { last: () => [insert('b'), insert('a'), insert('c')] })).rejects.toThrow(/duplicate key/);
    expect(await stored()).toEqual([]);
    await inTransaction(pool, (sql) => run(sql, insert('d')));
    expect(await stored()).toEqual(['d']);
  });

  it('runs no last statement when the work throws', async () => {
    const last = jest.fn(() => [insert('b')]);
    await expect(
      inTransaction(
        pool,
        async (sql) => {
          await run(sql, insert('a'));
          throw new Error('refused');
        },
        { last },
      ),
    ).rejects.toThrow('refused');
    expect(last).not.toHaveBeenCalled();
    expect(await stored()).toEqual([]);
  });

  it('runs queries in order with inOrder, each seeing the ones before, and answers each', async () => {
    const [, counted] = await inTransaction(pool, (sql) =>
      inOrder(sql, [() => run(sql, insert('a')), () => run(sql, statement(`SELECT count(*)::int AS n FROM ${table}`))]),
    );
    expect(counted.rows).toEqual([{ n: 1 }]);
  });
});
