import { testDatabaseUrl } from '@herald/config';
import { applyMigrations, ensureDatabase } from '@herald/db';

// Runs once per `pnpm test`: the shared test database exists and carries every migration.
export default async function globalSetup(): Promise<void> {
  const url = testDatabaseUrl();
  await ensureDatabase(url);
  await applyMigrations(url);
}
