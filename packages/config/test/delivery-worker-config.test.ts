import { ConfigError, loadConfig } from '../src';

describe('loadConfig for the delivery worker', () => {
  it('defaults to 16 callbacks at once, 10 s per callback, 4 KiB of answer kept and Retry-After up to an hour', () => {
    const config = loadConfig({});
    expect(config.worker).toEqual({ concurrency: 16, lockDurationMs: 30_000, stalledIntervalMs: 30_000 });
    expect(config.callback).toEqual({ timeoutMs: 10_000, responseMaxBytes: 4_096, tokenTimeoutMs: 10_000 });
    expect(config.retry.retryAfterMaxMs).toBe(3_600_000);
    expect(config.reconciler).toEqual({ intervalMs: 60_000, staleAfterMs: 300_000, batchSize: 500 });
  });

  it('reads every delivery-worker variable that is set', () => {
    const config = loadConfig({
      WORKER_CONCURRENCY: '64',
      WORKER_LOCK_DURATION_MS: '60000',
      WORKER_STALLED_INTERVAL_MS: '15000',
      CALLBACK_TIMEOUT_MS: '5000',
      CALLBACK_RESPONSE_MAX_BYTES: '0',
      OAUTH_TOKEN_TIMEOUT_MS: '3000',
      RETRY_AFTER_MAX_MS: '600000',
      RECONCILER_INTERVAL_MS: '1000',
      RECONCILER_STALE_AFTER_MS: '2000',
      RECONCILER_BATCH_SIZE: '50',
    });
    expect(config.worker).toEqual({ concurrency: 64, lockDurationMs: 60_000, stalledIntervalMs: 15_000 });
    expect(config.callback).toEqual({ timeoutMs: 5_000, responseMaxBytes: 0, tokenTimeoutMs: 3_000 });
    expect(config.retry.retryAfterMaxMs).toBe(600_000);
    expect(config.reconciler).toEqual({ intervalMs: 1_000, staleAfterMs: 2_000, batchSize: 50 });
  });

  it.each([
    ['WORKER_CONCURRENCY', '0', 'must be between 1 and 1000, got 0'],
    ['WORKER_CONCURRENCY', 'many', 'must be a whole number, got "many"'],
    ['WORKER_LOCK_DURATION_MS', '10', 'must be between 1000 and 3600000, got 10'],
    ['WORKER_STALLED_INTERVAL_MS', '0', 'must be between 500 and 3600000, got 0'],
    ['CALLBACK_TIMEOUT_MS', '1', 'must be between 10 and 600000, got 1'],
    ['CALLBACK_RESPONSE_MAX_BYTES', '2000000', 'must be between 0 and 1048576, got 2000000'],
    ['OAUTH_TOKEN_TIMEOUT_MS', '-5', 'must be a whole number, got "-5"'],
    ['RETRY_AFTER_MAX_MS', '1.5', 'must be a whole number, got "1.5"'],
    ['RECONCILER_INTERVAL_MS', '10', 'must be between 100 and 3600000, got 10'],
    ['RECONCILER_BATCH_SIZE', '0', 'must be between 1 and 10000, got 0'],
  ])('refuses %s=%s, naming the variable', (variable, value, problem) => {
    let error: unknown;
    try {
      loadConfig({ [variable]: value });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toBe(`${variable}: ${problem}`);
  });
});
