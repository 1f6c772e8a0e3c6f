import { loadWorkerConfig } from '../src';
import { configErrorOf } from './support/config-errors';

/** All a production worker needs: the two stores and the key of stored credentials. */
const PRODUCTION_WORKER = {
  NODE_ENV: 'production',
  DATABASE_URL: 'postgresql://herald@db:5432/herald',
  REDIS_URL: 'redis://cache:6379',
  SECRETS_KEY: '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff',
};

describe('loadWorkerConfig', () => {
  it('defaults to 16 callbacks at once, 10 s per callback, 4 KiB of answer kept and Retry-After up to an hour', () => {
    const config = loadWorkerConfig({});
    expect(config.worker).toEqual({ concurrency: 128, lockDurationMs: 10_000, stalledIntervalMs: 5_000 });
    expect(config.callback).toEqual({ timeoutMs: 10_000, responseMaxBytes: 4_096, tokenTimeoutMs: 10_000, tokenDefaultLifetimeSeconds: 3_600 });
    expect(config.retry).toEqual({
      // About three days of tries (docs/delivery.md lists the waits), as payment platforms retry.
      attempts: 22,
      backoffDelayMs: 30_000,
      backoffMaxMs: 21_600_000,
      backoffJitter: 0.2,
      keepCompletedSeconds: 86_400,
      keepFailedSeconds: 14 * 86_400,
      keepCompletedMax: 100_000,
      keepFailedMax: 100_000,
      retryAfterMaxMs: 3_600_000,
    });
    expect(config.sweeper).toEqual({ intervalMs: 5_000, graceMs: 10_000, batchSize: 500 });
    expect(config.reconciler).toEqual({ intervalMs: 60_000, staleAfterMs: 300_000, batchSize: 500, lossCheckMs: 1_000 });
    expect(config.partitions).toEqual({ intervalMs: 3_600_000, deliveryRetentionDays: 30, eventRetentionDays: 0 });
  });

  it('reads every delivery-worker variable that is set', () => {
    const config = loadWorkerConfig({
      WORKER_CONCURRENCY: '64',
      WORKER_LOCK_DURATION_MS: '60000',
      WORKER_STALLED_INTERVAL_MS: '15000',
      CALLBACK_TIMEOUT_MS: '5000',
      CALLBACK_RESPONSE_MAX_BYTES: '0',
      OAUTH_TOKEN_TIMEOUT_MS: '3000',
      OAUTH_TOKEN_DEFAULT_LIFETIME_SECONDS: '600',
      DELIVERY_BACKOFF_MS: '100',
      DELIVERY_BACKOFF_MAX_MS: '400',
      DELIVERY_BACKOFF_JITTER: '0',
      RETRY_AFTER_MAX_MS: '600000',
      SWEEPER_INTERVAL_MS: '200',
      SWEEPER_GRACE_MS: '0',
      SWEEPER_BATCH_SIZE: '10',
      RECONCILER_INTERVAL_MS: '1000',
      RECONCILER_STALE_AFTER_MS: '2000',
      RECONCILER_BATCH_SIZE: '50',
      RECONCILER_LOSS_CHECK_MS: '250',
      PARTITION_MAINTENANCE_INTERVAL_MS: '60000',
      DELIVERY_RETENTION_DAYS: '0',
      EVENT_RETENTION_DAYS: '400',
    });
    expect(config.worker).toEqual({ concurrency: 64, lockDurationMs: 60_000, stalledIntervalMs: 15_000 });
    expect(config.callback).toEqual({ timeoutMs: 5_000, responseMaxBytes: 0, tokenTimeoutMs: 3_000, tokenDefaultLifetimeSeconds: 600 });
    expect(config.retry).toMatchObject({ backoffDelayMs: 100, backoffMaxMs: 400, backoffJitter: 0, retryAfterMaxMs: 600_000 });
    expect(config.sweeper).toEqual({ intervalMs: 200, graceMs: 0, batchSize: 10 });
    expect(config.reconciler).toEqual({ intervalMs: 1_000, staleAfterMs: 2_000, batchSize: 50, lossCheckMs: 250 });
    expect(config.partitions).toEqual({ intervalMs: 60_000, deliveryRetentionDays: 0, eventRetentionDays: 400 });
  });

  it('refuses a DELIVERY_BACKOFF_MAX_MS below DELIVERY_BACKOFF_MS, naming both', () => {
    expect(configErrorOf(loadWorkerConfig, { DELIVERY_BACKOFF_MS: '60000', DELIVERY_BACKOFF_MAX_MS: '30000' })).toMatchObject({
      variable: 'DELIVERY_BACKOFF_MAX_MS',
      message: expect.stringContaining('at least DELIVERY_BACKOFF_MS (60000)'),
    });
  });

  it('limits each target to 16 callbacks in flight and opens its breaker after 5 failures in a row or 70 % of 10+ over 5 minutes, for 30 s', () => {
    expect(loadWorkerConfig({}).targetGate).toEqual({
      maxInFlight: 16,
      breaker: { failures: 5, ratio: 0.7, windowMs: 300_000, minRequests: 10, openMs: 30_000, openMaxMs: 300_000 },
    });
  });

  it('reads every target gate variable that is set; 0 turns the limit and each breaker rule off', () => {
    const config = loadWorkerConfig({
      TARGET_MAX_IN_FLIGHT: '0',
      TARGET_BREAKER_FAILURES: '0',
      TARGET_BREAKER_RATIO: '0.5',
      TARGET_BREAKER_WINDOW_SECONDS: '60',
      TARGET_BREAKER_MIN_REQUESTS: '20',
      TARGET_BREAKER_OPEN_SECONDS: '2',
      TARGET_BREAKER_OPEN_MAX_SECONDS: '2',
    });
    expect(config.targetGate).toEqual({
      maxInFlight: 0,
      breaker: { failures: 0, ratio: 0.5, windowMs: 60_000, minRequests: 20, openMs: 2_000, openMaxMs: 2_000 },
    });
  });

  it('auto-disables a target after 5 days of failures by default, reads seconds or a unit, and 0 turns it off', () => {
    expect(loadWorkerConfig({}).targetAutoDisableAfterMs).toBe(5 * 86_400_000);
    expect(loadWorkerConfig({ TARGET_AUTO_DISABLE_AFTER: '90' }).targetAutoDisableAfterMs).toBe(90_000);
    expect(loadWorkerConfig({ TARGET_AUTO_DISABLE_AFTER: '45s' }).targetAutoDisableAfterMs).toBe(45_000);
    expect(loadWorkerConfig({ TARGET_AUTO_DISABLE_AFTER: '30m' }).targetAutoDisableAfterMs).toBe(1_800_000);
    expect(loadWorkerConfig({ TARGET_AUTO_DISABLE_AFTER: '12h' }).targetAutoDisableAfterMs).toBe(43_200_000);
    expect(loadWorkerConfig({ TARGET_AUTO_DISABLE_AFTER: '2d' }).targetAutoDisableAfterMs).toBe(172_800_000);
    expect(loadWorkerConfig({ TARGET_AUTO_DISABLE_AFTER: '0' }).targetAutoDisableAfterMs).toBe(0);
  });

  it('allows private targets outside production only, and reads TARGET_HOST_ALLOWLIST', () => {
    expect(loadWorkerConfig({}).allowPrivateTargets).toBe(true);
    expect(loadWorkerConfig(PRODUCTION_WORKER).allowPrivateTargets).toBe(false);
    expect(loadWorkerConfig({ ...PRODUCTION_WORKER, TARGET_HOST_ALLOWLIST: 'Hooks.Internal.' }).targetHostAllowlist).toEqual(['hooks.internal']);
  });

  it.each([
    ['WORKER_CONCURRENCY', '0', 'must be between 1 and 1000, got 0'],
    ['WORKER_CONCURRENCY', 'many', 'must be a whole number, got "many"'],
    ['WORKER_LOCK_DURATION_MS', '10', 'must be between 1000 and 3600000, got 10'],
    ['WORKER_STALLED_INTERVAL_MS', '0', 'must be between 500 and 3600000, got 0'],
    ['CALLBACK_TIMEOUT_MS', '1', 'must be between 10 and 600000, got 1'],
    ['CALLBACK_RESPONSE_MAX_BYTES', '2000000', 'must be between 0 and 1048576, got 2000000'],
    ['OAUTH_TOKEN_TIMEOUT_MS', '-5', 'must be a whole number, got "-5"'],
    ['OAUTH_TOKEN_DEFAULT_LIFETIME_SECONDS', '0', 'must be between 1 and 86400, got 0'],
    ['DELIVERY_BACKOFF_JITTER', '1.5', 'must be a number from 0 to 1, got "1.5"'],
    ['RETRY_AFTER_MAX_MS', '1.5', 'must be a whole number, got "1.5"'],
    ['SWEEPER_INTERVAL_MS', '10', 'must be between 100 and 3600000, got 10'],
    ['RECONCILER_INTERVAL_MS', '10', 'must be between 100 and 3600000, got 10'],
    ['RECONCILER_BATCH_SIZE', '0', 'must be between 1 and 10000, got 0'],
    ['DELIVERY_RETENTION_DAYS', '-1', 'must be a whole number, got "-1"'],
    ['DELIVERY_RETENTION_DAYS', '40000', 'must be between 0 and 36500, got 40000'],
    ['EVENT_RETENTION_DAYS', '-1', 'must be a whole number, got "-1"'],
    ['PARTITION_MAINTENANCE_INTERVAL_MS', '10', 'must be between 1000 and 86400000, got 10'],
    ['TARGET_MAX_IN_FLIGHT', '-1', 'must be a whole number, got "-1"'],
    ['TARGET_BREAKER_FAILURES', 'five', 'must be a whole number, got "five"'],
    ['TARGET_BREAKER_RATIO', '70', 'must be a number from 0 to 1, got "70"'],
    ['TARGET_BREAKER_WINDOW_SECONDS', '0', 'must be between 1 and 86400, got 0'],
    ['TARGET_BREAKER_MIN_REQUESTS', '0', 'must be between 1 and 1000000, got 0'],
    ['TARGET_BREAKER_OPEN_SECONDS', '0', 'must be between 1 and 86400, got 0'],
    ['TARGET_BREAKER_OPEN_MAX_SECONDS', '10', 'must be at least TARGET_BREAKER_OPEN_SECONDS (30)'],
    ['TARGET_AUTO_DISABLE_AFTER', '5 days', 'must be whole seconds or a number with a unit s, m, h or d (e.g. 5d, 12h), got "5 days"'],
    ['TARGET_AUTO_DISABLE_AFTER', '-1', 'must be whole seconds or a number with a unit s, m, h or d (e.g. 5d, 12h), got "-1"'],
    ['TARGET_AUTO_DISABLE_AFTER', '400d', 'must be between 0 and 31536000 seconds, got "400d"'],
  ])('refuses %s=%s, naming the variable', (variable, value, problem) => {
    expect(configErrorOf(loadWorkerConfig, { [variable]: value }).message).toBe(`${variable}: ${problem}`);
  });

  describe('in production', () => {
    it('starts with only DATABASE_URL, REDIS_URL and SECRETS_KEY set', () => {
      const config = loadWorkerConfig(PRODUCTION_WORKER);
      expect(config).toMatchObject({ nodeEnv: 'production', databaseUrl: PRODUCTION_WORKER.DATABASE_URL, redisUrl: PRODUCTION_WORKER.REDIS_URL });
    });

    it('refuses to start without SECRETS_KEY, or with the development key', () => {
      expect(configErrorOf(loadWorkerConfig, { ...PRODUCTION_WORKER, SECRETS_KEY: '' }).message).toBe('SECRETS_KEY: is required when NODE_ENV=production');
      const devKey = loadWorkerConfig({}).secretsKey.toString('hex');
      expect(configErrorOf(loadWorkerConfig, { ...PRODUCTION_WORKER, SECRETS_KEY: devKey }).message).toBe(
        'SECRETS_KEY: must not be the development key in production',
      );
    });

    it('refuses a SECRETS_KEY that is all one byte', () => {
      for (const key of ['00'.repeat(32), Buffer.alloc(32, 0xa5).toString('base64')]) {
        expect(configErrorOf(loadWorkerConfig, { ...PRODUCTION_WORKER, SECRETS_KEY: key }).message).toBe(
          'SECRETS_KEY: must hold at least 8 distinct byte values in production',
        );
      }
    });

    it("neither reads nor checks the events-api's secrets and settings, even malformed", () => {
      const config = loadWorkerConfig({
        ...PRODUCTION_WORKER,
        ADMIN_TOKEN: 'dev-admin-token',
        INGEST_TOKEN: 'short',
        DASHBOARD_PASSWORD: 'dev-dashboard-password',
        DASHBOARD_USERNAME: 'has:colon',
        PORT: 'not a port',
        API_KEY_CACHE_MS: '-1',
      }) as unknown as Record<string, unknown>;
      for (const key of ['adminToken', 'ingestToken', 'dashboard', 'port', 'apiKeyCacheMs', 'rateLimitRequests', 'ingestBodyLimitBytes']) {
        expect(config).not.toHaveProperty(key);
      }
    });
  });
});
