import { prepareTestDatabase, type TestRunDatabase } from './test-database';

declare global {
  // The run's database, from its global setup to its global teardown (one process, one global).
  var heraldTestRunDatabase: TestRunDatabase | undefined;
}

// Runs once per `pnpm test`, before Jest starts its workers: the run's database exists and carries
// every migration, and the workers, started after it, find its URL in TEST_DATABASE_URL.
export default async function globalSetup(): Promise<void> {
  const database = await prepareTestDatabase(process.env);
  process.env.TEST_DATABASE_URL = database.url;
  globalThis.heraldTestRunDatabase = database;
}
