import pg from 'pg';
import globalSetup from '../src/global-setup';
import globalTeardown from '../src/global-teardown';
import { prepareTestDatabase, releaseTestDatabase } from '../src/test-database';
import { createScratchDatabase, databaseUrlFor, uniqueId } from '../src';

async function databaseExists(url: string): Promise<boolean> {
  const name = new URL(url).pathname.slice(1);
  const admin = new pg.Client({ connectionString: databaseUrlFor('postgres') });
  await admin.connect();
  try {
    return (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
  } finally {
    await admin.end();
  }
}

async function migrationsApplied(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return Number((await client.query('SELECT count(*) AS n FROM "_prisma_migrations"')).rows[0].n);
  } finally {
    await client.end();
  }
}

describe('the test run database', () => {
  it("without TEST_DATABASE_URL, is a migrated database of the run's own, dropped by the run's global teardown", async () => {
    const shell = process.env.TEST_DATABASE_URL;
    delete process.env.TEST_DATABASE_URL;
    let url: string | undefined;
    try {
      await globalSetup();
      url = process.env.TEST_DATABASE_URL;
      expect(url).toMatch(/^postgresql:\/\/postgres@127\.0\.0\.1:5432\/herald_test_/);
      expect(await databaseExists(url!)).toBe(true);
      expect(await migrationsApplied(url!)).toBeGreaterThan(0);
    } finally {
      await globalTeardown();
      if (shell === undefined) delete process.env.TEST_DATABASE_URL;
      else process.env.TEST_DATABASE_URL = shell;
    }
    expect(await databaseExists(url!)).toBe(false);
  });

  it('gives two runs side by side (CI beside a developer) a database each', async () => {
    const one = await prepareTestDatabase({});
    const other = await prepareTestDatabase({});
    try {
      expect(one.url).not.toBe(other.url);
    } finally {
      await releaseTestDatabase(one);
      await releaseTestDatabase(other);
    }
    expect(await databaseExists(one.url)).toBe(false);
  });

  it("with TEST_DATABASE_URL, is that database, migrated and kept: it is the caller's", async () => {
    const scratch = await createScratchDatabase(`herald_given_${uniqueId('').slice(1)}`.toLowerCase());
    try {
      const database = await prepareTestDatabase({ TEST_DATABASE_URL: scratch.url });
      expect(database.url).toBe(scratch.url);
      expect(await migrationsApplied(scratch.url)).toBeGreaterThan(0);
      await releaseTestDatabase(database);
      expect(await databaseExists(scratch.url)).toBe(true);
    } finally {
      await scratch.drop();
    }
  });
});
