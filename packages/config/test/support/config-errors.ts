import { ConfigError, type Env } from '../../src';

/** The secrets the events-api must be given in production (each long enough, none a development default). */
export const PRODUCTION_API_SECRETS = {
  NODE_ENV: 'production',
  ADMIN_TOKEN: 'a'.repeat(40),
  INGEST_TOKEN: 'i'.repeat(40),
  SECRETS_KEY: '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff',
  DASHBOARD_PASSWORD: 'd'.repeat(16),
};

/** The ConfigError `load` throws for `env`; fails the test if it throws anything else or nothing. */
export function configErrorOf(load: (env: Env) => unknown, env: Record<string, string>): ConfigError {
  try {
    load(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected the loader to throw');
}
