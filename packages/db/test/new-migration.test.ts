import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { MIGRATIONS_DIR, readMigrations } from '../src/migrations';
import { newMigration, NoSchemaChangeError } from '../src/tooling/new-migration';
import { testDatabaseUrl } from '../../testing/src';
import { useScratch, type Scratch } from './support/scratch';

const SCHEMA = readFileSync(path.join(MIGRATIONS_DIR, '..', 'schema.prisma'), 'utf8');

/** schema.prisma with one more optional column on programs. */
const SCHEMA_WITH_NOTE = SCHEMA.replace(/(model Program \{\n)/, '$1  note String?\n');

/** The repository's migrations in a temporary folder, with `schema` as the schema to migrate to. */
function workspace(scratch: Scratch, schema: string) {
  const migrationsDir = scratch.migrationsDir({}, { withRepositoryMigrations: true });
  const schemaPath = path.join(migrationsDir, 'schema.prisma');
  writeFileSync(schemaPath, schema);
  return {
    migrationsDir,
    writeMigration: (name: string, now?: Date) => newMigration({ name, now, migrationsDir, schemaPath, serverUrl: testDatabaseUrl() }),
  };
}

const folders = (dir: string) => readdirSync(dir).filter((name) => name !== 'migration_lock.toml' && name !== 'schema.prisma');

describe('newMigration', () => {
  const scratch = useScratch();

  it('writes the SQL that takes the migrated database to the changed schema, and nothing more after it', async () => {
    expect(SCHEMA_WITH_NOTE).not.toBe(SCHEMA);
    const { migrationsDir, writeMigration } = workspace(scratch, SCHEMA_WITH_NOTE);
    const latest = readMigrations(migrationsDir).at(-1)!.name;

    const dir = await writeMigration('program_note', new Date('2099-01-02T03:04:05Z'));

    expect(path.basename(dir)).toBe('20990102030405_program_note');
    expect(path.basename(dir) > latest).toBe(true);
    expect(readFileSync(path.join(dir, 'migration.sql'), 'utf8')).toBe('-- AlterTable\nALTER TABLE "programs" ADD COLUMN     "note" TEXT;\n');
    await expect(writeMigration('again', new Date('2099-01-02T03:04:06Z'))).rejects.toThrow(NoSchemaChangeError);
  });

  it('writes nothing when schema.prisma already matches the migrations', async () => {
    const { migrationsDir, writeMigration } = workspace(scratch, SCHEMA);
    const before = folders(migrationsDir);

    // A moment after any migration's, so that only the schema decides (migrations may be dated ahead of the clock).
    await expect(writeMigration('nothing', new Date('2099-01-02T03:04:05Z'))).rejects.toThrow(NoSchemaChangeError);
    expect(folders(migrationsDir)).toEqual(before);
  });

  it('refuses a name Prisma would not give a migration folder', async () => {
    const { writeMigration } = workspace(scratch, SCHEMA_WITH_NOTE);

    await expect(writeMigration('Add note')).rejects.toThrow('migration name "Add note": use lowercase letters, digits and underscores');
  });

  it('refuses a timestamp that would sort before the latest migration', async () => {
    const { writeMigration } = workspace(scratch, SCHEMA_WITH_NOTE);

    await expect(writeMigration('late', new Date('2000-01-01T00:00:00Z'))).rejects.toThrow(/^20000101000000_late would not sort after the latest migration /);
  });
});
