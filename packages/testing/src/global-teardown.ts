import { releaseTestDatabase } from './test-database';

// Runs once per `pnpm test`, after the last test file: drops the run's database if the run made it.
export default async function globalTeardown(): Promise<void> {
  const database = globalThis.heraldTestRunDatabase;
  globalThis.heraldTestRunDatabase = undefined;
  if (database) await releaseTestDatabase(database);
}
