import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MIGRATIONS_DIR } from '../../src/migrations';
// @herald/testing depends on @herald/db, so this package reaches its helpers by path.
import { createScratchDatabase } from '../../../testing/src';

export interface Scratch {
  /** A fresh empty database; returns its URL. */
  database(): Promise<string>;
  /**
   * A temporary migrations folder holding migration_lock.toml, the repository's migrations when
   * `withRepositoryMigrations` is set, and `migrations` (folder name -> migration.sql).
   */
  migrationsDir(migrations?: Record<string, string>, options?: { withRepositoryMigrations?: boolean }): string;
  /**
   * A temporary migrations folder with the repository's migrations up to `name`, it included or not:
   * the database a migration meets, or the database right after it.
   */
  repositoryMigrationsUpTo(name: string, options: { including: boolean }): string;
}

/** Scratch databases and folders for the tests of one file, all removed after each test. */
export function useScratch(): Scratch {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
  });
  return {
    async database() {
      const scratch = await createScratchDatabase('herald_db_test');
      cleanups.push(scratch.drop);
      return scratch.url;
    },
    migrationsDir(migrations = {}, { withRepositoryMigrations = false } = {}) {
      const dir = mkdtempSync(path.join(tmpdir(), 'herald-migrations-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      if (withRepositoryMigrations) cpSync(MIGRATIONS_DIR, dir, { recursive: true });
      else copyFileSync(path.join(MIGRATIONS_DIR, 'migration_lock.toml'), path.join(dir, 'migration_lock.toml'));
      for (const [name, sql] of Object.entries(migrations)) {
        mkdirSync(path.join(dir, name));
        writeFileSync(path.join(dir, name, 'migration.sql'), sql);
      }
      return dir;
    },
    repositoryMigrationsUpTo(name, { including }) {
      const dir = this.migrationsDir({}, { withRepositoryMigrations: true });
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        if (entry.isDirectory() && (including ? entry.name > name : entry.name >= name)) rmSync(path.join(dir, entry.name), { recursive: true });
      }
      return dir;
    },
  };
}
