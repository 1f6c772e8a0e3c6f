/**
 * `pnpm db:new-migration <name>`: writes prisma/migrations/<UTC YYYYMMDDHHMMSS>_<name>/migration.sql
 * with the SQL that takes a database carrying every existing migration to prisma/schema.prisma.
 *
 * The starting point is a database, not a saved copy of schema.prisma: the existing migrations are
 * applied to a scratch database by our runner and the schema engine diffs that database against
 * schema.prisma. That is what `prisma migrate dev` does with its shadow database, so a hand-edited
 * migration.sql counts for what it really does, and there is no snapshot to forget or go stale.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadDatabaseConfig } from '@herald/config';
import { HeraldError } from '@herald/domain';
import { dropDatabase, ensureDatabase } from '../database';
import { applyMigrations, MIGRATIONS_DIR, readMigrations } from '../migrations';
import { databaseDiffSql } from './schema-sql';

export interface NewMigrationOptions {
  /** The migration's name: lowercase letters, digits and underscores, as Prisma names them. */
  name: string;
  /** A database URL on the PostgreSQL server that may host a short-lived scratch database. */
  serverUrl: string;
  /** The migrations folder to read and write. Default: prisma/migrations. */
  migrationsDir?: string;
  /** The schema to migrate to. Default: schema.prisma next to the migrations folder. */
  schemaPath?: string;
  /** The moment that names the folder. Default: now. */
  now?: Date;
}

/** Raised when schema.prisma already matches the migrations; nothing is written. */
export class NoSchemaChangeError extends HeraldError {
  readonly code = 'no_schema_change';
}

const MIGRATION_NAME = /^[a-z0-9_]{1,200}$/;

/** Writes the next migration and returns its folder. */
export async function newMigration(options: NewMigrationOptions): Promise<string> {
  const migrationsDir = options.migrationsDir ?? MIGRATIONS_DIR;
  const schemaPath = options.schemaPath ?? path.join(migrationsDir, '..', 'schema.prisma');
  if (!MIGRATION_NAME.test(options.name)) {
    throw new Error(`migration name "${options.name}": use lowercase letters, digits and underscores`);
  }
  const folder = `${utcTimestamp(options.now ?? new Date())}_${options.name}`;
  const latest = readMigrations(migrationsDir).at(-1)?.name;
  // Migrations apply in name order: a new one that sorted before the latest would never run there.
  if (latest !== undefined && latest >= folder) {
    throw new Error(`${folder} would not sort after the latest migration ${latest}`);
  }

  const scratch = new URL(options.serverUrl);
  scratch.pathname = `/herald_new_migration_${randomBytes(6).toString('hex')}`;
  let sql: string;
  await ensureDatabase(scratch.toString());
  try {
    await applyMigrations(scratch.toString(), migrationsDir);
    sql = await databaseDiffSql(scratch.toString(), readFileSync(schemaPath, 'utf8'));
  } finally {
    await dropDatabase(scratch.toString());
  }
  if (!sql) throw new NoSchemaChangeError(`${schemaPath} already matches the migrations in ${migrationsDir}`);

  const dir = path.join(migrationsDir, folder);
  mkdirSync(dir);
  writeFileSync(path.join(dir, 'migration.sql'), sql);
  return dir;
}

function utcTimestamp(date: Date): string {
  return date.toISOString().replace(/\D/g, '').slice(0, 14);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.length !== 1) {
    console.error('usage: pnpm db:new-migration <name>   (lowercase letters, digits and underscores)');
    process.exit(2);
  }
  const dir = await newMigration({ name: args[0]!, serverUrl: loadDatabaseConfig().databaseUrl });
  console.log(`wrote ${path.relative(process.cwd(), path.join(dir, 'migration.sql'))}`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(`db:new-migration: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
