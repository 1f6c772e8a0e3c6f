import { ConfigError, loadConfig } from '../src';

const PROD_SECRETS = {
  NODE_ENV: 'production',
  ADMIN_TOKEN: 'a'.repeat(40),
  INGEST_TOKEN: 'i'.repeat(40),
  SECRETS_KEY: '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff',
  DASHBOARD_PASSWORD: 'd'.repeat(16),
};

function errorOf(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected loadConfig to throw');
}

describe('loadConfig', () => {
  it('gives a new user working local defaults with no variable set', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      nodeEnv: 'development',
      databaseUrl: 'postgresql://postgres@127.0.0.1:5432/herald',
      redisUrl: 'redis://127.0.0.1:6379',
      port: 3000,
      queuePrefix: 'herald',
      logLevel: 'info',
    });
    expect(config.adminToken).toBeTruthy();
    expect(config.ingestToken).toBeTruthy();
    expect(config.secretsKey).toHaveLength(32);
  });

  it('caches API key lookups for 5 s by default, and refuses a bound over a minute', () => {
    expect(loadConfig({}).apiKeyCacheMs).toBe(5_000);
    expect(loadConfig({ API_KEY_CACHE_MS: '0' }).apiKeyCacheMs).toBe(0);
    expect(errorOf({ API_KEY_CACHE_MS: '60001' }).message).toMatch(/API_KEY_CACHE_MS/);
  });

  it('returns a frozen object', () => {
    expect(Object.isFrozen(loadConfig({}))).toBe(true);
  });

  it('reads every variable that is set', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://u@db:5432/x',
      REDIS_URL: 'rediss://cache:6380',
      PORT: '8080',
      QUEUE_PREFIX: 'herald-eu',
      ADMIN_TOKEN: 'admin',
      INGEST_TOKEN: 'ingest',
      SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
      SECRETS_KEY_ID: 'k2',
      LOG_LEVEL: 'debug',
      SHUTDOWN_TIMEOUT_MS: '2500',
      READINESS_TIMEOUT_MS: '500',
    });
    expect(config).toMatchObject({
      databaseUrl: 'postgres://u@db:5432/x',
      redisUrl: 'rediss://cache:6380',
      port: 8080,
      queuePrefix: 'herald-eu',
      adminToken: 'admin',
      ingestToken: 'ingest',
      secretsKeyId: 'k2',
      logLevel: 'debug',
      shutdownTimeoutMs: 2500,
      readinessTimeoutMs: 500,
    });
    expect(config.secretsKey.equals(Buffer.alloc(32, 7))).toBe(true);
  });

  it('reads SECRETS_PREVIOUS_KEYS as id:key pairs, keys in hex or base64', () => {
    const config = loadConfig({ SECRETS_KEY_ID: 'k3', SECRETS_PREVIOUS_KEYS: `k1:${'ab'.repeat(32)}, k2:${Buffer.alloc(32, 9).toString('base64')}` });
    expect(Object.keys(config.secretsPreviousKeys)).toEqual(['k1', 'k2']);
    expect(config.secretsPreviousKeys['k1']).toEqual(Buffer.alloc(32, 0xab));
    expect(config.secretsPreviousKeys['k2']).toEqual(Buffer.alloc(32, 9));
    expect(loadConfig({}).secretsPreviousKeys).toEqual({});
  });

  it.each([
    ['k1', /id:key pairs/],
    ['k.1:' + 'ab'.repeat(32), /id:key pairs/],
    ['k0:short', /SECRETS_PREVIOUS_KEYS \(key id k0\): must be 32 bytes/],
    [`k0:${'ab'.repeat(32)},k0:${'cd'.repeat(32)}`, /names key id k0 twice/],
    [`k1:${'ab'.repeat(32)}`, /which is SECRETS_KEY_ID/],
  ])('refuses SECRETS_PREVIOUS_KEYS=%p, never quoting a key', (value, message) => {
    const error = errorOf({ SECRETS_PREVIOUS_KEYS: value });
    expect(error.message).toMatch(message);
    expect(error.message).not.toContain('abab');
  });

  it('accepts SECRETS_KEY written as 64 hex characters', () => {
    const config = loadConfig({ SECRETS_KEY: 'ff'.repeat(32) });
    expect(config.secretsKey.equals(Buffer.alloc(32, 0xff))).toBe(true);
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ PORT: '  ' }).port).toBe(3000);
  });

  it.each([
    ['PORT', 'abc', /PORT: must be a whole number/],
    ['PORT', '70000', /PORT: must be between 0 and 65535/],
    ['PORT', '-1', /PORT: must be a whole number/],
    ['DATABASE_URL', 'not a url', /DATABASE_URL: is not a valid URL/],
    ['DATABASE_URL', 'mysql://db/x', /DATABASE_URL: must use postgres:\/\/ or postgresql:\/\//],
    ['REDIS_URL', 'http://cache', /REDIS_URL: must use redis:\/\/ or rediss:\/\//],
    ['NODE_ENV', 'staging', /NODE_ENV: must be one of development, test, production/],
    ['LOG_LEVEL', 'verbose', /LOG_LEVEL: must be one of/],
    ['SECRETS_KEY', 'too-short', /SECRETS_KEY: must be 32 bytes/],
    ['SECRETS_KEY', 'ab'.repeat(31), /SECRETS_KEY: must be 32 bytes/],
    ['QUEUE_PREFIX', 'has space', /QUEUE_PREFIX: must match/],
    ['SHUTDOWN_TIMEOUT_MS', '1.5', /SHUTDOWN_TIMEOUT_MS: must be a whole number/],
    ['READINESS_TIMEOUT_MS', '10', /READINESS_TIMEOUT_MS: must be between 50 and 60000/],
  ])('rejects %s=%s with a message naming the variable', (name, value, message) => {
    const error = errorOf({ [name]: value });
    expect(error.variable).toBe(name);
    expect(error.message).toMatch(message);
  });

  describe('in production', () => {
    it('starts when every secret is set', () => {
      expect(loadConfig(PROD_SECRETS).nodeEnv).toBe('production');
    });

    it.each(['ADMIN_TOKEN', 'INGEST_TOKEN', 'SECRETS_KEY', 'DASHBOARD_PASSWORD'])('refuses to start without %s', (name) => {
      const env: Record<string, string> = { ...PROD_SECRETS };
      delete env[name];
      expect(errorOf(env).message).toBe(`${name}: is required when NODE_ENV=production`);
    });

    it('refuses a short admin token', () => {
      expect(errorOf({ ...PROD_SECRETS, ADMIN_TOKEN: 'short' }).message).toMatch(/ADMIN_TOKEN: must be at least 32 characters/);
    });

    it('refuses the development secrets key', () => {
      const devKey = loadConfig({}).secretsKey.toString('base64');
      expect(errorOf({ ...PROD_SECRETS, SECRETS_KEY: devKey }).message).toMatch(/SECRETS_KEY: must not be the development key/);
    });

    it('refuses the development tokens', () => {
      const dev = loadConfig({});
      expect(errorOf({ ...PROD_SECRETS, INGEST_TOKEN: dev.ingestToken }).variable).toBe('INGEST_TOKEN');
      expect(errorOf({ ...PROD_SECRETS, DASHBOARD_PASSWORD: dev.dashboard.password }).message).toBe(
        'DASHBOARD_PASSWORD: must not be the development default in production',
      );
    });

    it('refuses a dashboard password shorter than 16 characters', () => {
      expect(errorOf({ ...PROD_SECRETS, DASHBOARD_PASSWORD: 'p'.repeat(15) }).message).toBe(
        'DASHBOARD_PASSWORD: must be at least 16 characters in production',
      );
    });
  });

  describe('the Bull dashboard credentials', () => {
    it('default to admin and a development password outside production', () => {
      expect(loadConfig({}).dashboard).toEqual({ username: 'admin', password: 'dev-dashboard-password' });
    });

    it('are read from DASHBOARD_USERNAME and DASHBOARD_PASSWORD', () => {
      expect(loadConfig({ ...PROD_SECRETS, DASHBOARD_USERNAME: 'ops', DASHBOARD_PASSWORD: 'correct horse battery' }).dashboard).toEqual({
        username: 'ops',
        password: 'correct horse battery',
      });
    });

    it('refuse a user name with a colon, which HTTP Basic cannot carry', () => {
      expect(errorOf({ DASHBOARD_USERNAME: 'ops:team' }).variable).toBe('DASHBOARD_USERNAME');
    });
  });
});
