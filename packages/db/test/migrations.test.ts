import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { applyMigrations, MIGRATIONS_DIR, MigrationError } from '../src/migrations';
import { schemaDiffSql } from '../src/tooling/schema-sql';
import { describeDatabase, structureDifferences } from './support/database-structure';
import { useScratch } from './support/scratch';

const SCHEMA = readFileSync(path.join(MIGRATIONS_DIR, '..', 'schema.prisma'), 'utf8');

/** The migration folders of the repository, read independently of the runner under test. */
const repositoryMigrations = readdirSync(MIGRATIONS_DIR, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort()
  .map((name) => ({ name, sql: readFileSync(path.join(MIGRATIONS_DIR, name, 'migration.sql'), 'utf8') }));

/** The table each model of schema.prisma maps to. */
const schemaTables = [...SCHEMA.matchAll(/^model (\w+) \{([^}]*)\}/gm)].map(([, model, body]) => /@@map\("([^"]+)"\)/.exec(body!)?.[1] ?? model!).sort();

interface HistoryRow {
  id: string;
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  started_at: Date;
  applied_steps_count: number;
  rolled_back_at: Date | null;
  logs: string | null;
}

async function query<Row extends object>(databaseUrl: string, sql: string): Promise<Row[]> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query<Row>(sql)).rows;
  } finally {
    await client.end();
  }
}

const history = (databaseUrl: string) => query<HistoryRow>(databaseUrl, 'SELECT * FROM "_prisma_migrations" ORDER BY migration_name');

/** The tables of the public schema, partitions left out (a partitioned table counts once). */
const tableNames = async (databaseUrl: string) =>
  (
    await query<{ tablename: string }>(
      databaseUrl,
      "SELECT c.relname AS tablename FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition",
    )
  )
    .map((row) => row.tablename)
    .filter((name) => name !== '_prisma_migrations')
    .sort();

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('applyMigrations', () => {
  const scratch = useScratch();

  it('creates every table of schema.prisma in an empty database and records each migration as Prisma does', async () => {
    const url = await scratch.database();

    const result = await applyMigrations(url);

    expect(repositoryMigrations.length).toBeGreaterThan(0);
    expect(result).toEqual({ applied: repositoryMigrations.map((m) => m.name), alreadyApplied: [] });
    expect(await tableNames(url)).toEqual(schemaTables);
    const rows = await history(url);
    expect(rows).toEqual(
      repositoryMigrations.map((migration) => ({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        migration_name: migration.name,
        checksum: sha256(migration.sql),
        finished_at: expect.any(Date),
        started_at: expect.any(Date),
        applied_steps_count: 1,
        rolled_back_at: null,
        logs: null,
      })),
    );
  });

  it('applies nothing the second time and leaves the history and the structure as they were', async () => {
    const url = await scratch.database();
    await applyMigrations(url);
    const [rowsBefore, structureBefore] = [await history(url), await describeDatabase(url)];

    const second = await applyMigrations(url);

    expect(second).toEqual({ applied: [], alreadyApplied: repositoryMigrations.map((m) => m.name) });
    expect(await history(url)).toEqual(rowsBefore);
    expect(await describeDatabase(url)).toEqual(structureBefore);
  });

  it('rolls back a migration that fails and records no row for it', async () => {
    const url = await scratch.database();
    const dir = scratch.migrationsDir({
      '20000101000000_good': 'CREATE TABLE "good" ("id" INTEGER PRIMARY KEY);',
      '20000101000001_bad': 'CREATE TABLE "half_done" ("id" INTEGER);\nINSERT INTO "missing_table" VALUES (1);',
    });

    await expect(applyMigrations(url, dir)).rejects.toThrow(
      new MigrationError('migration 20000101000001_bad failed and was rolled back: relation "missing_table" does not exist'),
    );

    expect(await tableNames(url)).toEqual(['good']);
    expect((await history(url)).map((row) => row.migration_name)).toEqual(['20000101000000_good']);
  });

  it('refuses a migration whose file changed after it was applied and applies nothing more', async () => {
    const url = await scratch.database();
    const dir = scratch.migrationsDir({ '20000101000000_first': 'CREATE TABLE "first" ("id" INTEGER);' });
    await applyMigrations(url, dir);
    writeFileSync(path.join(dir, '20000101000000_first', 'migration.sql'), 'CREATE TABLE "first" ("id" BIGINT);');
    mkdirSync(path.join(dir, '20000101000001_second'));
    writeFileSync(path.join(dir, '20000101000001_second', 'migration.sql'), 'CREATE TABLE "second" ("id" INTEGER);');

    await expect(applyMigrations(url, dir)).rejects.toThrow(
      new MigrationError('migration 20000101000000_first was changed after it was applied (checksum differs)'),
    );
    expect(await tableNames(url)).toEqual(['first']);
    expect((await history(url)).map((row) => row.migration_name)).toEqual(['20000101000000_first']);
  });
});

describe('the migrations and schema.prisma', () => {
  const scratch = useScratch();

  /** Database A carries the migrations; database B carries the SQL of an empty database -> schema.prisma. */
  async function migratedAndPushed(): Promise<{ migrated: string; pushed: string }> {
    const [migrated, pushed] = await Promise.all([scratch.database(), scratch.database()]);
    await applyMigrations(migrated);
    await query(pushed, await schemaDiffSql(null, SCHEMA));
    return { migrated, pushed };
  }

  async function differences({ migrated, pushed }: { migrated: string; pushed: string }): Promise<string[]> {
    return structureDifferences(
      { name: 'the migrated database', facts: await describeDatabase(migrated) },
      { name: 'the database built from schema.prisma', facts: await describeDatabase(pushed) },
    );
  }

  it('describe the same tables, columns, indexes, constraints and enums', async () => {
    const databases = await migratedAndPushed();

    const facts = await describeDatabase(databases.migrated);
    expect(facts.filter((fact) => fact.startsWith('table ')).length).toBe(schemaTables.length);
    for (const kind of ['column', 'index', 'constraint', 'enum']) {
      expect(facts.some((fact) => fact.startsWith(`${kind} `))).toBe(true);
    }
    expect(await differences(databases)).toEqual([]);
  });

  it('would report an index or a column that differs', async () => {
    const databases = await migratedAndPushed();
    await query(databases.pushed, 'DROP INDEX "events_object_id_created_at_idx"; ALTER TABLE "programs" ALTER COLUMN "name" DROP NOT NULL');

    expect(await differences(databases)).toEqual([
      'only in the migrated database: column programs.name text NOT NULL',
      'only in the migrated database: index events.events_object_id_created_at_idx: CREATE INDEX events_object_id_created_at_idx ON public.events USING btree (object_id, created_at)',
      'only in the database built from schema.prisma: column programs.name text NULL',
    ]);
  });
});
