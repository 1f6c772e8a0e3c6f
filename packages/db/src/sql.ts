import type pg from 'pg';

/** Something that runs one SQL statement: the pool, or a client inside a transaction. */
export type Sql = Pick<pg.Pool, 'query'>;

/**
 * Runs `work` in one transaction on a connection of the pool: committed when it resolves, rolled
 * back when it throws. A connection whose rollback fails is discarded rather than returned.
 */
export async function inTransaction<T>(pool: pg.Pool, work: (sql: Sql) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = rollbackError as Error;
    }
    throw error;
  } finally {
    client.release(broken);
  }
}
