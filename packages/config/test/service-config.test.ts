import { loadApiConfig, loadWorkerConfig } from '../src';
import { configErrorOf, PRODUCTION_API_SECRETS } from './support/config-errors';

describe.each([
  ['loadApiConfig', loadApiConfig],
  ['loadWorkerConfig', loadWorkerConfig],
] as const)('the settings both services read, through %s', (_name, load) => {
  it('gives a new user working local defaults with no variable set', () => {
    const config = load({});
    expect(config).toMatchObject({
      nodeEnv: 'development',
      databaseUrl: 'postgresql://postgres@127.0.0.1:5432/herald',
      redisUrl: 'redis://127.0.0.1:6379',
      queuePrefix: 'herald',
      logLevel: 'info',
      shutdownTimeoutMs: 10_000,
      readinessTimeoutMs: 2_000,
      enqueueTimeoutMs: 2_000,
      secretsKeyId: 'k1',
    });
    expect(config.secretsKey).toHaveLength(32);
    expect(config.retry).toMatchObject({
      attempts: 22,
      keepCompletedSeconds: 86_400,
      keepFailedSeconds: 14 * 86_400,
      keepCompletedMax: 100_000,
      keepFailedMax: 100_000,
    });
  });

  it('returns a frozen object, its groups frozen too', () => {
    const config = load({});
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.retry)).toBe(true);
    expect(Object.isFrozen(config.metrics)).toBe(true);
  });

  it('reads every shared variable that is set', () => {
    const config = load({
      DATABASE_URL: 'postgres://u@db:5432/x',
      REDIS_URL: 'rediss://cache:6380',
      QUEUE_PREFIX: 'herald-eu',
      SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
      SECRETS_KEY_ID: 'k2',
      LOG_LEVEL: 'debug',
      SHUTDOWN_TIMEOUT_MS: '2500',
      READINESS_TIMEOUT_MS: '500',
      ENQUEUE_TIMEOUT_MS: '750',
      DELIVERY_ATTEMPTS: '5',
    });
    expect(config).toMatchObject({
      databaseUrl: 'postgres://u@db:5432/x',
      redisUrl: 'rediss://cache:6380',
      queuePrefix: 'herald-eu',
      secretsKeyId: 'k2',
      logLevel: 'debug',
      shutdownTimeoutMs: 2500,
      readinessTimeoutMs: 500,
      enqueueTimeoutMs: 750,
    });
    expect(config.retry.attempts).toBe(5);
    expect(config.secretsKey.equals(Buffer.alloc(32, 7))).toBe(true);
  });

  it('logs at warn under NODE_ENV=test', () => {
    expect(load({ NODE_ENV: 'test' }).logLevel).toBe('warn');
  });

  it('reads SECRETS_PREVIOUS_KEYS as id:key pairs, keys in hex or base64', () => {
    const config = load({ SECRETS_KEY_ID: 'k3', SECRETS_PREVIOUS_KEYS: `k1:${'ab'.repeat(32)}, k2:${Buffer.alloc(32, 9).toString('base64')}` });
    expect(Object.keys(config.secretsPreviousKeys)).toEqual(['k1', 'k2']);
    expect(config.secretsPreviousKeys['k1']).toEqual(Buffer.alloc(32, 0xab));
    expect(config.secretsPreviousKeys['k2']).toEqual(Buffer.alloc(32, 9));
    expect(load({}).secretsPreviousKeys).toEqual({});
  });

  it.each([
    ['k1', /id:key pairs, each id matching \[A-Za-z0-9_-\]\{1,32\}$/],
    [`k.1:${'ab'.repeat(32)}`, /id:key pairs/],
    ['k0:short', /SECRETS_PREVIOUS_KEYS \(key id k0\): must be 32 bytes/],
    [`k0:${'ab'.repeat(32)},k0:${'cd'.repeat(32)}`, /names key id k0 twice/],
    [`k1:${'ab'.repeat(32)}`, /which is SECRETS_KEY_ID/],
  ])('refuses SECRETS_PREVIOUS_KEYS=%p, never quoting a key', (value, message) => {
    const error = configErrorOf(load, { SECRETS_PREVIOUS_KEYS: value });
    expect(error.message).toMatch(message);
    expect(error.message).not.toContain('abab');
  });

  it('accepts SECRETS_KEY written as 64 hex characters', () => {
    const config = load({ SECRETS_KEY: 'ff'.repeat(32) });
    expect(config.secretsKey.equals(Buffer.alloc(32, 0xff))).toBe(true);
  });

  it('treats an empty variable as unset', () => {
    expect(load({ QUEUE_PREFIX: '  ' }).queuePrefix).toBe('herald');
  });

  it('puts QUEUE_PREFIX in braces (one hash slot) when REDIS_URL names a Redis Cluster, and only then', () => {
    const cluster = load({ REDIS_URL: 'redis+cluster://node-1:7000,node-2:7001', QUEUE_PREFIX: 'herald-eu' });
    expect(cluster).toMatchObject({ redisUrl: 'redis+cluster://node-1:7000,node-2:7001', queuePrefix: '{herald-eu}' });
    expect(load({ REDIS_URL: 'rediss+cluster://node-1:7000' }).queuePrefix).toBe('{herald}');
    expect(load({ REDIS_URL: 'redis://node-1:7000', QUEUE_PREFIX: 'herald-eu' }).queuePrefix).toBe('herald-eu');
  });

  it.each([
    ['DATABASE_URL', 'not a url', /DATABASE_URL: is not a valid URL/],
    ['DATABASE_URL', 'mysql://db/x', /DATABASE_URL: must use postgres:\/\/ or postgresql:\/\//],
    ['REDIS_URL', 'http://cache', /REDIS_URL: must use redis:\/\/ or rediss:\/\//],
    ['REDIS_URL', 'redis+cluster://node-1', /REDIS_URL: "node-1" is not a host:port cluster node/],
    ['REDIS_URL', 'redis+cluster://node-1:7000/3', /REDIS_URL: a cluster URL must be/],
    ['NODE_ENV', 'staging', /NODE_ENV: must be one of development, test, production/],
    ['LOG_LEVEL', 'verbose', /LOG_LEVEL: must be one of/],
    ['SECRETS_KEY', 'too-short', /SECRETS_KEY: must be 32 bytes/],
    ['SECRETS_KEY', 'ab'.repeat(31), /SECRETS_KEY: must be 32 bytes/],
    ['QUEUE_PREFIX', 'has space', /QUEUE_PREFIX: must match/],
    ['SHUTDOWN_TIMEOUT_MS', '1.5', /SHUTDOWN_TIMEOUT_MS: must be a whole number/],
    ['READINESS_TIMEOUT_MS', '10', /READINESS_TIMEOUT_MS: must be between 50 and 60000/],
    ['ENQUEUE_TIMEOUT_MS', '10', /ENQUEUE_TIMEOUT_MS: must be between 50 and 60000/],
    ['DELIVERY_ATTEMPTS', '0', /DELIVERY_ATTEMPTS: must be between 1 and 100/],
    ['JOBS_KEEP_FAILED_SECONDS', 'forever', /JOBS_KEEP_FAILED_SECONDS: must be a whole number/],
  ])('rejects %s=%s with a message naming the variable', (name, value, message) => {
    const error = configErrorOf(load, { [name]: value });
    expect(error.variable).toBe(name);
    expect(error.code).toBe('config_invalid');
    expect(error.message).toMatch(message);
  });

  describe('in production', () => {
    it('refuses to start without SECRETS_KEY', () => {
      expect(configErrorOf(load, { ...PRODUCTION_API_SECRETS, SECRETS_KEY: '' }).message).toBe('SECRETS_KEY: is required when NODE_ENV=production');
    });

    it('refuses the development secrets key', () => {
      const devKey = load({}).secretsKey.toString('base64');
      expect(configErrorOf(load, { ...PRODUCTION_API_SECRETS, SECRETS_KEY: devKey }).message).toMatch(/SECRETS_KEY: must not be the development key/);
    });
  });
});
