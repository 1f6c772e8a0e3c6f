import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { HeraldError } from '@herald/domain';
import { Client } from 'pg';

/**
 * Applies prisma/migrations the way `prisma migrate deploy` does, without Prisma's native schema
 * engine (which cannot be downloaded on our machines): each pending migration.sql runs in its own
 * transaction and is recorded in `_prisma_migrations` with the same columns and checksum Prisma
 * writes, so Prisma's own CLI can take over the same database later.
 */

/** The folder of this repository's migrations. */
export const MIGRATIONS_DIR = path.resolve(__dirname, '../../../prisma/migrations');

// The advisory lock key Prisma's schema engine takes, so our runner and Prisma's CLI exclude each other.
const PRISMA_ADVISORY_LOCK = 72707369;

// The table exactly as Prisma's schema engine creates it on PostgreSQL.
const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

export interface Migration {
  /** Folder name: `<timestamp>_<name>`. */
  name: string;
  sql: string;
  /** SHA-256 hex of migration.sql, as Prisma computes it. */
  checksum: string;
}

export interface MigrationResult {
  applied: string[];
  alreadyApplied: string[];
}

/** Raised when the database's history and the migrations folder disagree; nothing is applied. */
export class MigrationError extends HeraldError {
  readonly code = 'migration_failed';
}

/** Reads `<dir>/<timestamp>_<name>/migration.sql` in name order. */
export function readMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  const lock = path.join(dir, 'migration_lock.toml');
  if (!existsSync(lock) || !/provider\s*=\s*"postgresql"/.test(readFileSync(lock, 'utf8'))) {
    throw new MigrationError(`${lock} is missing or does not name provider "postgresql"`);
  }
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(path.join(dir, entry.name, 'migration.sql')))
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const sql = readFileSync(path.join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

/** Applies every pending migration; a second run applies nothing. */
export async function applyMigrations(databaseUrl: string, dir: string = MIGRATIONS_DIR): Promise<MigrationResult> {
  const migrations = readMigrations(dir);
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [PRISMA_ADVISORY_LOCK]);
    await client.query(CREATE_MIGRATIONS_TABLE);
    const recorded = await client.query<{ migration_name: string; checksum: string; finished_at: Date | null; rolled_back_at: Date | null }>(
      'SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations" ORDER BY started_at',
    );
    const done = new Map<string, string>();
    for (const row of recorded.rows) {
      if (row.rolled_back_at) continue;
      if (!row.finished_at) {
        throw new MigrationError(`migration ${row.migration_name} started but did not finish; resolve it before migrating (prisma migrate resolve)`);
      }
      done.set(row.migration_name, row.checksum);
    }
    const known = new Set(migrations.map((m) => m.name));
    for (const name of done.keys()) {
      if (!known.has(name)) throw new MigrationError(`the database has migration ${name}, which is not in ${dir}`);
    }
    const result: MigrationResult = { applied: [], alreadyApplied: [] };
    for (const migration of migrations) {
      const checksum = done.get(migration.name);
      if (checksum !== undefined) {
        if (checksum !== migration.checksum) {
          throw new MigrationError(`migration ${migration.name} was changed after it was applied (checksum differs)`);
        }
        result.alreadyApplied.push(migration.name);
        continue;
      }
      await applyOne(client, migration);
      result.applied.push(migration.name);
    }
    return result;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_ADVISORY_LOCK]).catch(() => undefined);
    await client.end();
  }
}

async function applyOne(client: Client, migration: Migration): Promise<void> {
  const id = randomUUID();
  await client.query('BEGIN');
  try {
    await client.query('INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count) VALUES ($1, $2, $3, now(), 0)', [
      id,
      migration.checksum,
      migration.name,
    ]);
    await client.query(migration.sql);
    await client.query('UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1', [id]);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw new MigrationError(`migration ${migration.name} failed and was rolled back: ${(error as Error).message}`);
  }
}
