// `pnpm db:migrate`: creates the database if missing, then applies pending migrations.
import { loadDatabaseConfig } from '@herald/config';
import { ensureDatabase } from '../database';
import { applyMigrations } from '../migrations';

async function main(): Promise<void> {
  const { databaseUrl } = loadDatabaseConfig();
  const where = new URL(databaseUrl);
  where.password = '';
  if (await ensureDatabase(databaseUrl)) console.log(`created database ${where.pathname.slice(1)}`);
  const result = await applyMigrations(databaseUrl);
  for (const name of result.applied) console.log(`applied ${name}`);
  console.log(`${result.applied.length} migration(s) applied, ${result.alreadyApplied.length} already applied (${where.host}${where.pathname})`);
}

main().catch((error: unknown) => {
  console.error(`db:migrate failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
