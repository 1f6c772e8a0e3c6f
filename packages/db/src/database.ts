import { Client } from 'pg';

/** Creates the database named in the URL when it does not exist yet (connecting to `postgres`). */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!name) throw new Error('the database URL names no database');
  url.pathname = '/postgres';
  const admin = new Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount) return false;
    try {
      await admin.query(`CREATE DATABASE ${quoteIdentifier(name)}`);
    } catch (error) {
      // Another process (a parallel test worker, a second service) created it first.
      if ((error as { code?: string }).code !== '42P04') throw error;
      return false;
    }
    return true;
  } finally {
    await admin.end();
  }
}

/** Drops a database, closing its other connections first. For tests' scratch databases. */
export async function dropDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  url.pathname = '/postgres';
  const admin = new Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(name)} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
