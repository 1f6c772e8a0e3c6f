import { readMigrations } from '../../src/migrations';

/** The migration that created the ingest month, which today's ingest holds (insertNewEvents). */
const INGEST_MONTH_MIGRATION = '20261127000000_event_ingest_month';

/**
 * Runs today's ingest (`store`) on a database migrated only up to an older migration, to fill it
 * as a live database of that time was filled. Today's ingest needs the ingest month, which such a
 * database predates: it is created for `store` by that migration's own SQL and dropped after, so
 * that the migrations still to apply find the database as they expect.
 */
export async function ingestIntoOlderDatabase<T>(pool: { query(text: string): Promise<unknown> }, store: () => Promise<T>): Promise<T> {
  const migration = readMigrations().find((m) => m.name === INGEST_MONTH_MIGRATION);
  if (!migration) throw new Error(`migration ${INGEST_MONTH_MIGRATION} is missing`);
  await pool.query(migration.sql);
  try {
    return await store();
  } finally {
    await pool.query('DROP TABLE event_ingest_month');
  }
}
