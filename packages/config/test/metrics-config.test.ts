import { ConfigError, loadApiConfig, loadWorkerConfig } from '../src';

// 32 bytes with enough distinct values for production.
const PRODUCTION_KEY = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';

describe('the metrics settings', () => {
  it("default to the worker's port 9464 and an open /metrics", () => {
    expect(loadWorkerConfig({}).metrics).toEqual({ port: 9464, host: '127.0.0.1', movesOnWhenTaken: true, token: undefined });
    expect(loadApiConfig({}).metrics).toEqual({ token: undefined });
  });

  it('read METRICS_PORT (0 for a free port) in the worker and METRICS_TOKEN in both services', () => {
    const env = { METRICS_PORT: '0', METRICS_TOKEN: 'scrape-token-0123456789' };
    expect(loadWorkerConfig(env).metrics).toEqual({ port: 0, host: '127.0.0.1', movesOnWhenTaken: false, token: 'scrape-token-0123456789' });
    // The events-api serves /metrics on PORT.
    expect(loadApiConfig(env).metrics).toEqual({ token: 'scrape-token-0123456789' });
  });

  it.each([
    ['METRICS_PORT', '70000', 'METRICS_PORT: must be between 0 and 65535, got 70000'],
    ['METRICS_TOKEN', 'short', 'METRICS_TOKEN: must be at least 16 characters'],
    ['METRICS_TOKEN', 'a token with spaces inside', 'METRICS_TOKEN: must be printable ASCII without spaces'],
  ])('refuse %s=%s, naming the variable', (variable, value, message) => {
    expect(() => loadWorkerConfig({ [variable]: value })).toThrow(new ConfigError(variable, message.slice(variable.length + 2)));
  });

  it('move a taken METRICS_PORT on only under development defaults: never one that was set, never in production', () => {
    expect(loadWorkerConfig({ NODE_ENV: 'development' }).metrics.movesOnWhenTaken).toBe(true);
    expect(loadWorkerConfig({ NODE_ENV: 'development', METRICS_PORT: '9464' }).metrics.movesOnWhenTaken).toBe(false);
    expect(loadWorkerConfig({ NODE_ENV: 'test' }).metrics.movesOnWhenTaken).toBe(false);
    expect(loadWorkerConfig({ NODE_ENV: 'production', SECRETS_KEY: PRODUCTION_KEY }).metrics.movesOnWhenTaken).toBe(false);
  });

  it('bind HOST: loopback outside production, every interface in production unless HOST says otherwise', () => {
    expect(loadApiConfig({}).host).toBe('127.0.0.1');
    expect(loadApiConfig({ NODE_ENV: 'test' }).host).toBe('127.0.0.1');
    expect(loadWorkerConfig({ NODE_ENV: 'production', SECRETS_KEY: PRODUCTION_KEY }).metrics.host).toBeUndefined();
    expect(loadWorkerConfig({ NODE_ENV: 'production', SECRETS_KEY: PRODUCTION_KEY, HOST: '10.0.0.7' }).metrics.host).toBe('10.0.0.7');
    expect(loadApiConfig({ HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    expect(loadApiConfig({ HOST: '::' }).host).toBe('::');
    expect(() => loadApiConfig({ HOST: 'http://example.com' })).toThrow('HOST: must be an IP address or a host name');
  });

  it('read the failed-authentication throttle (AUTH_FAILURES_*) in both services, which guards METRICS_TOKEN in each', () => {
    const defaults = { perAddress: 20, windowSeconds: 60, maxAddresses: 10_000 };
    expect(loadWorkerConfig({}).authFailures).toEqual(defaults);
    expect(loadApiConfig({}).authFailures).toEqual(defaults);
    const env = { AUTH_FAILURES_PER_ADDRESS: '3', AUTH_FAILURE_WINDOW_SECONDS: '600', AUTH_FAILURE_MAX_ADDRESSES: '50' };
    expect(loadWorkerConfig(env).authFailures).toEqual({ perAddress: 3, windowSeconds: 600, maxAddresses: 50 });
    expect(loadApiConfig(env).authFailures).toEqual({ perAddress: 3, windowSeconds: 600, maxAddresses: 50 });
    expect(() => loadWorkerConfig({ AUTH_FAILURES_PER_ADDRESS: '0' })).toThrow(/AUTH_FAILURES_PER_ADDRESS: must be between 1 and 1000000/);
  });

  it('refuse a malformed METRICS_TOKEN in the events-api too', () => {
    expect(() => loadApiConfig({ METRICS_TOKEN: 'short' })).toThrow('METRICS_TOKEN: must be at least 16 characters');
  });
});
