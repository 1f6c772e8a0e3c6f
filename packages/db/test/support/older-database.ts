import { readMigrations } from '../../src/migrations';

/**
 * The migrations that created what today's repositories need: the ingest month, and the objects'
 * sequence numbers (insertNewEvents); a target's delivery policy and ordering, and a delivery's
 * wait (targets' upsert, the worker's record).
 */
const INGEST_MONTH_MIGRATION = '20261127000000_event_ingest_month';
const OBJECT_SEQUENCES_MIGRATION = '20261128015653_object_sequences';
const DELIVERY_POLICY_MIGRATION = '20261128042133_target_delivery_policy';
const ORDERED_DELIVERY_MIGRATION = '20261128042214_ordered_delivery';

function migrationSql(name: string): string {
  const migration = readMigrations().find((m) => m.name === name);
  if (!migration) throw new Error(`migration ${name} is missing`);
  return migration.sql;
}

/**
 * Runs today's repositories (`work`: targets set and an ingest that fill the database as a live one
 * of that time was filled, or a read of GET /events) on a database migrated only up to an older migration.
 * They need the ingest month and the objects' sequence numbers, which such a database predates:
 * those are created for `work` by their migrations' own SQL (events stored before are numbered
 * as that migration numbers them) and dropped after, so that the migrations still to apply find
 * the database as they expect.
 */
export async function withTodaysTables<T>(pool: { query(text: string): Promise<unknown> }, work: () => Promise<T>): Promise<T> {
  await pool.query(migrationSql(INGEST_MONTH_MIGRATION));
  await pool.query(migrationSql(OBJECT_SEQUENCES_MIGRATION));
  await pool.query(migrationSql(DELIVERY_POLICY_MIGRATION));
  await pool.query(migrationSql(ORDERED_DELIVERY_MIGRATION));
  try {
    return await work();
  } finally {
    await pool.query(
      'DROP TABLE event_ingest_month; DROP TABLE object_sequences; ALTER TABLE events DROP COLUMN sequence; ' +
        'ALTER TABLE notification_targets DROP COLUMN delivery_policy, DROP COLUMN ordering; ALTER TABLE deliveries DROP COLUMN waiting_for',
    );
  }
}
