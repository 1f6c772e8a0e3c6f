import { testDatabaseUrl } from '@herald/config';
import { applyMigrations, dropDatabase, ensureDatabase } from '@herald/db';
import { uniqueId } from './unique-id';

/** The database of one test run, and whether the run made it (and so drops it at its end). */
export interface TestRunDatabase {
  readonly url: string;
  readonly ownedByRun: boolean;
}

/**
 * The database a test run uses, created if need be and migrated. TEST_DATABASE_URL names one the
 * caller keeps; without it the run gets a database of its own on the default server, which
 * `releaseTestDatabase` drops, so that `pnpm test` leaves nothing behind and two runs side by side
 * never share one.
 */
export async function prepareTestDatabase(env: NodeJS.ProcessEnv): Promise<TestRunDatabase> {
  const given = Boolean(env.TEST_DATABASE_URL);
  const url = new URL(testDatabaseUrl(env));
  if (!given) url.pathname = `/${uniqueId('herald_test').toLowerCase()}`;
  const database = { url: url.toString(), ownedByRun: !given };
  await ensureDatabase(database.url);
  await applyMigrations(database.url);
  return database;
}

/** Drops the run's database if the run made it; a given one is left as it is. */
export async function releaseTestDatabase(database: TestRunDatabase): Promise<void> {
  if (database.ownedByRun) await dropDatabase(database.url);
}
