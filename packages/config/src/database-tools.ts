/** The settings of the database scripts (`pnpm db:*`) and of the test suites' database. */
import { url, type Env } from './parsers';
import { readDatabaseUrl, readNodeEnv, readSecretsKeyring, type SecretsKeyring } from './shared';

/** What `db:migrate`, `db:new-migration` and Prisma's CLI read: the database, nothing else. */
export interface DatabaseConfig {
  /** DATABASE_URL, as the services read it. */
  readonly databaseUrl: string;
}

/** What `db:reencrypt-credentials` reads: the database and the keys of stored credentials. */
export interface KeyRotationConfig extends DatabaseConfig, SecretsKeyring {}

export function loadDatabaseConfig(env: Env = process.env): DatabaseConfig {
  return Object.freeze({ databaseUrl: readDatabaseUrl(env) });
}

/** SECRETS_KEY is required (and not the development key) under NODE_ENV=production, as in the services. */
export function loadKeyRotationConfig(env: Env = process.env): KeyRotationConfig {
  const production = readNodeEnv(env) === 'production';
  return Object.freeze({ databaseUrl: readDatabaseUrl(env), ...readSecretsKeyring(env, production) });
}

/**
 * TEST_DATABASE_URL: the database the test suites use (never the one the system runs on). Unset, a
 * test run makes a database of its own on this default's server and drops it at its end
 * (packages/testing test-database.ts).
 */
export function testDatabaseUrl(env: Env = process.env): string {
  return url(env, 'TEST_DATABASE_URL', ['postgres:', 'postgresql:'], 'postgresql://postgres@127.0.0.1:5432/herald_test');
}
