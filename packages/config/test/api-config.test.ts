import { loadApiConfig } from '../src';
import { configErrorOf, PRODUCTION_API_SECRETS } from './support/config-errors';

describe('loadApiConfig', () => {
  it('listens on port 3000 with development tokens by default', () => {
    const config = loadApiConfig({});
    expect(config.port).toBe(3000);
    expect(config.adminToken).toBe('dev-admin-token');
    expect(config.ingestToken).toBe('dev-ingest-token');
    expect(config).toMatchObject({ rateLimitRequests: 100, rateLimitWindowSeconds: 1, rateLimitSyncMs: 100, ingestBodyLimitBytes: 5 * 1024 * 1024 });
  });

  it('caches API key lookups for 5 s by default, and refuses a bound over a minute', () => {
    expect(loadApiConfig({}).apiKeyCacheMs).toBe(5_000);
    expect(loadApiConfig({ API_KEY_CACHE_MS: '0' }).apiKeyCacheMs).toBe(0);
    expect(configErrorOf(loadApiConfig, { API_KEY_CACHE_MS: '60001' }).message).toMatch(/API_KEY_CACHE_MS/);
  });

  it('refuses events over 256 KiB and keeps a rotated signing secret for a day by default', () => {
    expect(loadApiConfig({})).toMatchObject({ eventMaxBytes: 262_144, signingSecretRotationGraceSeconds: 86_400 });
    expect(loadApiConfig({ EVENT_MAX_BYTES: '1024', SIGNING_SECRET_ROTATION_GRACE_SECONDS: '0' })).toMatchObject({
      eventMaxBytes: 1024,
      signingSecretRotationGraceSeconds: 0,
    });
    expect(loadApiConfig({ SIGNING_SECRET_ROTATION_GRACE_SECONDS: '2592000' }).signingSecretRotationGraceSeconds).toBe(2_592_000);
  });

  it('bounds the API key cache, unknown-key lookups, failed authentications and bulk replays by default', () => {
    expect(loadApiConfig({})).toMatchObject({
      apiKeyCacheMaxEntries: 10_000,
      apiKeyCacheMaxBytes: 8 * 1024 * 1024,
      unknownApiKeysPerSecond: 50,
      authFailures: { perAddress: 20, windowSeconds: 60, maxAddresses: 10_000 },
      replayMaxDays: 31,
    });
  });

  it('reads EGRESS_ADDRESSES, the addresses callbacks leave from, as IP addresses or CIDR ranges, none by default', () => {
    expect(loadApiConfig({}).egressAddresses).toEqual([]);
    expect(loadApiConfig({ EGRESS_ADDRESSES: ' 203.0.113.7, 198.51.100.0/24 ,2001:db8::/48' }).egressAddresses).toEqual([
      '203.0.113.7',
      '198.51.100.0/24',
      '2001:db8::/48',
    ]);
    expect(() => loadApiConfig({ EGRESS_ADDRESSES: '203.0.113.7,egress.example' })).toThrow(
      /EGRESS_ADDRESSES: "egress.example" is not an IP address or a CIDR range/,
    );
    expect(() => loadApiConfig({ EGRESS_ADDRESSES: '198.51.100.0/33' })).toThrow(/EGRESS_ADDRESSES: "198.51.100.0\/33" is not an IP address or a CIDR range/);
  });

  it('reads TARGET_AUTO_DISABLE_AFTER as the worker does, to show merchants when their failing target would be switched off', () => {
    expect(loadApiConfig({}).targetAutoDisableAfterMs).toBe(5 * 86_400_000);
    expect(loadApiConfig({ TARGET_AUTO_DISABLE_AFTER: '12h' }).targetAutoDisableAfterMs).toBe(43_200_000);
    expect(loadApiConfig({ TARGET_AUTO_DISABLE_AFTER: '0' }).targetAutoDisableAfterMs).toBe(0);
    expect(() => loadApiConfig({ TARGET_AUTO_DISABLE_AFTER: '5 days' })).toThrow(/TARGET_AUTO_DISABLE_AFTER: must be whole seconds/);
  });

  it('reads those bounds from their variables', () => {
    const config = loadApiConfig({
      API_KEY_CACHE_MAX_ENTRIES: '100',
      API_KEY_CACHE_MAX_BYTES: '100000',
      UNKNOWN_API_KEYS_PER_SECOND: '5',
      AUTH_FAILURES_PER_ADDRESS: '3',
      AUTH_FAILURE_WINDOW_SECONDS: '10',
      AUTH_FAILURE_MAX_ADDRESSES: '7',
      REPLAY_MAX_DAYS: '2',
    });
    expect(config).toMatchObject({
      apiKeyCacheMaxEntries: 100,
      apiKeyCacheMaxBytes: 100_000,
      unknownApiKeysPerSecond: 5,
      authFailures: { perAddress: 3, windowSeconds: 10, maxAddresses: 7 },
      replayMaxDays: 2,
    });
  });

  it('lets merchants recover 7 days back, 1,000 callbacks at a time, by default, and reads both bounds', () => {
    expect(loadApiConfig({}).recovery).toEqual({ maxDays: 7, maxDeliveries: 1_000 });
    expect(loadApiConfig({ RECOVERY_MAX_DAYS: '3', RECOVERY_MAX_DELIVERIES: '50' }).recovery).toEqual({ maxDays: 3, maxDeliveries: 50 });
  });

  it('reads every events-api variable that is set', () => {
    const config = loadApiConfig({
      PORT: '8080',
      ADMIN_TOKEN: 'admin',
      INGEST_TOKEN: 'ingest',
      RATE_LIMIT_REQUESTS: '50',
      RATE_LIMIT_WINDOW_SECONDS: '10',
      RATE_LIMIT_SYNC_MS: '250',
      INGEST_BODY_LIMIT_BYTES: '2048',
    });
    expect(config).toMatchObject({
      port: 8080,
      adminToken: 'admin',
      ingestToken: 'ingest',
      rateLimitRequests: 50,
      rateLimitWindowSeconds: 10,
      rateLimitSyncMs: 250,
      ingestBodyLimitBytes: 2048,
    });
  });

  it('holds no worker-only setting', () => {
    const config = loadApiConfig({ WORKER_CONCURRENCY: '64', METRICS_PORT: '1234', DELIVERY_BACKOFF_MS: '5' }) as unknown as Record<string, unknown>;
    for (const key of ['worker', 'sweeper', 'reconciler', 'partitions']) expect(config).not.toHaveProperty(key);
    expect(config.retry).toEqual({
      attempts: 22,
      keepCompletedSeconds: 86_400,
      keepFailedSeconds: 14 * 86_400,
      keepCompletedMax: 100_000,
      keepFailedMax: 100_000,
    });
    expect(config.metrics).toEqual({ token: undefined });
  });

  it('neither reads nor validates worker-only variables', () => {
    expect(() => loadApiConfig({ WORKER_CONCURRENCY: 'many', METRICS_PORT: '70000', DELIVERY_BACKOFF_MS: '-1', SWEEPER_BATCH_SIZE: '0' })).not.toThrow();
  });

  it('reads PUBLIC_URL, the base URL of the OpenAPI documents, without a trailing slash; unset by default', () => {
    expect(loadApiConfig({}).publicUrl).toBeUndefined();
    expect(loadApiConfig({ PUBLIC_URL: 'https://herald.example.com/api/' }).publicUrl).toBe('https://herald.example.com/api');
    expect(configErrorOf(loadApiConfig, { PUBLIC_URL: 'herald.example.com' }).message).toContain('PUBLIC_URL');
    expect(configErrorOf(loadApiConfig, { PUBLIC_URL: 'ftp://herald.example.com' }).variable).toBe('PUBLIC_URL');
    expect(configErrorOf(loadApiConfig, { PUBLIC_URL: 'https://herald.example.com/?a=1' }).variable).toBe('PUBLIC_URL');
  });

  it('reads the limits of the callbacks and token requests it sends (test callbacks, credential checks) as the worker does', () => {
    expect(loadApiConfig({}).callback).toEqual({ timeoutMs: 10_000, responseMaxBytes: 4_096, tokenTimeoutMs: 10_000, tokenDefaultLifetimeSeconds: 3_600 });
    expect(loadApiConfig({ CALLBACK_TIMEOUT_MS: '500', CALLBACK_RESPONSE_MAX_BYTES: '10', OAUTH_TOKEN_TIMEOUT_MS: '700' }).callback).toEqual({
      timeoutMs: 500,
      responseMaxBytes: 10,
      tokenTimeoutMs: 700,
      tokenDefaultLifetimeSeconds: 3_600,
    });
    expect(configErrorOf(loadApiConfig, { OAUTH_TOKEN_TIMEOUT_MS: '5' }).variable).toBe('OAUTH_TOKEN_TIMEOUT_MS');
  });

  it.each([
    ['PORT', 'abc', /PORT: must be a whole number/],
    ['PORT', '70000', /PORT: must be between 0 and 65535/],
    ['PORT', '-1', /PORT: must be a whole number/],
    ['RATE_LIMIT_REQUESTS', '0', /RATE_LIMIT_REQUESTS: must be between 1 and 1000000/],
    ['RATE_LIMIT_SYNC_MS', '5', /RATE_LIMIT_SYNC_MS: must be between 10 and 10000/],
    ['RATE_LIMIT_SYNC_MS', '1001', /RATE_LIMIT_SYNC_MS: must be at most the rate limit window \(RATE_LIMIT_WINDOW_SECONDS = 1, 1000 ms\)/],
    ['INGEST_BODY_LIMIT_BYTES', '10', /INGEST_BODY_LIMIT_BYTES: must be between 1024 and 104857600/],
    ['EVENT_MAX_BYTES', '1023', /EVENT_MAX_BYTES: must be between 1024 and 104857600/],
    ['EVENT_MAX_BYTES', '256k', /EVENT_MAX_BYTES: must be a whole number/],
    ['SIGNING_SECRET_ROTATION_GRACE_SECONDS', '2592001', /SIGNING_SECRET_ROTATION_GRACE_SECONDS: must be between 0 and 2592000/],
    ['SIGNING_SECRET_ROTATION_GRACE_SECONDS', '-1', /SIGNING_SECRET_ROTATION_GRACE_SECONDS: must be a whole number/],
    ['API_KEY_CACHE_MAX_ENTRIES', '0', /API_KEY_CACHE_MAX_ENTRIES: must be between 1 and 1000000/],
    ['API_KEY_CACHE_MAX_BYTES', '1000', /API_KEY_CACHE_MAX_BYTES: must be between 65536 and 1073741824/],
    ['UNKNOWN_API_KEYS_PER_SECOND', '0', /UNKNOWN_API_KEYS_PER_SECOND: must be between 1 and 100000/],
    ['AUTH_FAILURES_PER_ADDRESS', 'x', /AUTH_FAILURES_PER_ADDRESS: must be a whole number/],
    ['AUTH_FAILURE_WINDOW_SECONDS', '86401', /AUTH_FAILURE_WINDOW_SECONDS: must be between 1 and 86400/],
    ['AUTH_FAILURE_MAX_ADDRESSES', '0', /AUTH_FAILURE_MAX_ADDRESSES: must be between 1 and 10000000/],
    ['REPLAY_MAX_DAYS', '0', /REPLAY_MAX_DAYS: must be between 1 and 3660/],
    ['RECOVERY_MAX_DAYS', '0', /RECOVERY_MAX_DAYS: must be between 1 and 365/],
    ['RECOVERY_MAX_DELIVERIES', '10001', /RECOVERY_MAX_DELIVERIES: must be between 1 and 10000/],
  ])('rejects %s=%s with a message naming the variable', (name, value, message) => {
    const error = configErrorOf(loadApiConfig, { [name]: value });
    expect(error.variable).toBe(name);
    expect(error.message).toMatch(message);
  });

  describe('the HTTP server limits', () => {
    it('default to 10 s for headers, 30 s per request, 5 s of keep-alive, 1,000 connections and 100 per address', () => {
      expect(loadApiConfig({}).http).toEqual({
        headersTimeoutMs: 10_000,
        requestTimeoutMs: 30_000,
        keepAliveTimeoutMs: 5_000,
        maxConnections: 1_000,
        maxConnectionsPerAddress: 100,
      });
    });

    it('are read from HTTP_HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS, HTTP_KEEP_ALIVE_TIMEOUT_MS, HTTP_MAX_CONNECTIONS and HTTP_MAX_CONNECTIONS_PER_ADDRESS', () => {
      const config = loadApiConfig({
        HTTP_HEADERS_TIMEOUT_MS: '2000',
        HTTP_REQUEST_TIMEOUT_MS: '4000',
        HTTP_KEEP_ALIVE_TIMEOUT_MS: '1000',
        HTTP_MAX_CONNECTIONS: '50',
        HTTP_MAX_CONNECTIONS_PER_ADDRESS: '8',
      });
      expect(config.http).toEqual({
        headersTimeoutMs: 2_000,
        requestTimeoutMs: 4_000,
        keepAliveTimeoutMs: 1_000,
        maxConnections: 50,
        maxConnectionsPerAddress: 8,
      });
    });

    it.each([
      ['HTTP_HEADERS_TIMEOUT_MS', '0', /HTTP_HEADERS_TIMEOUT_MS: must be between 100 and 600000/],
      ['HTTP_REQUEST_TIMEOUT_MS', '0', /HTTP_REQUEST_TIMEOUT_MS: must be between 100 and 3600000/],
      ['HTTP_KEEP_ALIVE_TIMEOUT_MS', '0', /HTTP_KEEP_ALIVE_TIMEOUT_MS: must be between 100 and 600000/],
      ['HTTP_MAX_CONNECTIONS', '0', /HTTP_MAX_CONNECTIONS: must be between 1 and 1000000/],
      ['HTTP_MAX_CONNECTIONS_PER_ADDRESS', '0', /HTTP_MAX_CONNECTIONS_PER_ADDRESS: must be between 1 and 1000000/],
      ['HTTP_HEADERS_TIMEOUT_MS', '40000', /HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS \(30000\)/],
    ])('refuse %s=%s', (name, value, message) => {
      const error = configErrorOf(loadApiConfig, { [name]: value });
      expect(error.variable).toBe(name);
      expect(error.message).toMatch(message);
    });
  });

  describe('in production', () => {
    it('starts when every secret it reads is set, with no worker setting', () => {
      expect(loadApiConfig(PRODUCTION_API_SECRETS).nodeEnv).toBe('production');
    });

    it.each(['ADMIN_TOKEN', 'INGEST_TOKEN', 'SECRETS_KEY', 'DASHBOARD_PASSWORD'])('refuses to start without %s', (name) => {
      const env: Record<string, string> = { ...PRODUCTION_API_SECRETS };
      delete env[name];
      expect(configErrorOf(loadApiConfig, env).message).toBe(`${name}: is required when NODE_ENV=production`);
    });

    it('refuses a short admin token', () => {
      expect(configErrorOf(loadApiConfig, { ...PRODUCTION_API_SECRETS, ADMIN_TOKEN: 'short' }).message).toMatch(/ADMIN_TOKEN: must be at least 32 characters/);
    });

    it('refuses the development tokens', () => {
      const dev = loadApiConfig({});
      expect(configErrorOf(loadApiConfig, { ...PRODUCTION_API_SECRETS, ADMIN_TOKEN: dev.adminToken }).variable).toBe('ADMIN_TOKEN');
      expect(configErrorOf(loadApiConfig, { ...PRODUCTION_API_SECRETS, INGEST_TOKEN: dev.ingestToken }).variable).toBe('INGEST_TOKEN');
      expect(configErrorOf(loadApiConfig, { ...PRODUCTION_API_SECRETS, DASHBOARD_PASSWORD: dev.dashboard.password }).message).toBe(
        'DASHBOARD_PASSWORD: must not be the development default in production',
      );
    });

    it('refuses a dashboard password shorter than 16 characters', () => {
      expect(configErrorOf(loadApiConfig, { ...PRODUCTION_API_SECRETS, DASHBOARD_PASSWORD: 'p'.repeat(15) }).message).toBe(
        'DASHBOARD_PASSWORD: must be at least 16 characters in production',
      );
    });
  });

  describe('in production, secrets that are collapsed or unusable', () => {
    it.each([
      ['ADMIN_TOKEN', 'INGEST_TOKEN'],
      ['ADMIN_TOKEN', 'DASHBOARD_PASSWORD'],
      ['INGEST_TOKEN', 'DASHBOARD_PASSWORD'],
    ])('refuses %s equal to %s', (first, second) => {
      const env = { ...PRODUCTION_API_SECRETS, [second]: PRODUCTION_API_SECRETS[first as keyof typeof PRODUCTION_API_SECRETS] };
      expect(configErrorOf(loadApiConfig, env).message).toBe(`${second}: must differ from ${first}`);
    });

    it.each(['ADMIN_TOKEN', 'INGEST_TOKEN'])('refuses whitespace inside %s, which no bearer header could match', (name) => {
      const value = `${PRODUCTION_API_SECRETS[name as 'ADMIN_TOKEN']} tail`;
      expect(configErrorOf(loadApiConfig, { ...PRODUCTION_API_SECRETS, [name]: value }).message).toBe(`${name}: must be printable ASCII without spaces`);
    });

    it.each([
      ['ADMIN_TOKEN', 'a'.repeat(32)],
      ['INGEST_TOKEN', 'abcdefg'.repeat(6)],
      ['DASHBOARD_PASSWORD', 'abab'.repeat(8)],
    ])('refuses %s=%s, which has fewer than 8 distinct characters', (name, value) => {
      expect(configErrorOf(loadApiConfig, { ...PRODUCTION_API_SECRETS, [name]: value }).message).toBe(
        `${name}: must hold at least 8 distinct characters in production`,
      );
    });

    it('refuses a SECRETS_KEY of fewer than 8 distinct bytes, such as all zeros', () => {
      expect(configErrorOf(loadApiConfig, { ...PRODUCTION_API_SECRETS, SECRETS_KEY: '00'.repeat(32) }).message).toBe(
        'SECRETS_KEY: must hold at least 8 distinct byte values in production',
      );
    });

    it('still accepts these values outside production', () => {
      expect(() => loadApiConfig({ ADMIN_TOKEN: 'same', INGEST_TOKEN: 'same', DASHBOARD_PASSWORD: 'same', SECRETS_KEY: '00'.repeat(32) })).not.toThrow();
    });
  });

  describe('the Bull dashboard credentials', () => {
    it('default to admin and a development password outside production', () => {
      expect(loadApiConfig({}).dashboard).toEqual({ username: 'admin', password: 'dev-dashboard-password' });
    });

    it('are read from DASHBOARD_USERNAME and DASHBOARD_PASSWORD', () => {
      expect(loadApiConfig({ ...PRODUCTION_API_SECRETS, DASHBOARD_USERNAME: 'ops', DASHBOARD_PASSWORD: 'correct horse battery' }).dashboard).toEqual({
        username: 'ops',
        password: 'correct horse battery',
      });
    });

    it('refuse a user name with a colon, which HTTP Basic cannot carry', () => {
      expect(configErrorOf(loadApiConfig, { DASHBOARD_USERNAME: 'ops:team' }).variable).toBe('DASHBOARD_USERNAME');
    });
  });
});
