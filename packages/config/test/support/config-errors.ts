import { ConfigError, type Env } from '../../src';

/** The secrets the events-api must be given in production (each long enough, distinct, varied, none a development default). */
export const PRODUCTION_API_SECRETS = {
  NODE_ENV: 'production',
  ADMIN_TOKEN: 'admin-7Kq2Vx9Lm4Rt8Wz3Np6Bd1Hf5Jc0Gs2Ye',
  INGEST_TOKEN: 'ingest-Qw3Er8Ty1Ui6Op4As9Df2Gh7Jk5Lz0Xc',
  SECRETS_KEY: '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff',
  DASHBOARD_PASSWORD: 'dash-Mn4Bv8Cx2Zl6',
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
