import { ConfigError, loadConfig } from '../src';

describe('loadConfig for metrics', () => {
  it('defaults to port 9464 and an open /metrics', () => {
    expect(loadConfig({}).metrics).toEqual({ port: 9464, token: undefined });
  });

  it('reads METRICS_PORT (0 for a free port) and METRICS_TOKEN', () => {
    expect(loadConfig({ METRICS_PORT: '0', METRICS_TOKEN: 'scrape-token-0123456789' }).metrics).toEqual({ port: 0, token: 'scrape-token-0123456789' });
  });

  it.each([
    ['METRICS_PORT', '70000', 'METRICS_PORT: must be between 0 and 65535, got 70000'],
    ['METRICS_TOKEN', 'short', 'METRICS_TOKEN: must be at least 16 characters'],
    ['METRICS_TOKEN', 'a token with spaces inside', 'METRICS_TOKEN: must be printable ASCII without spaces'],
  ])('refuses %s=%s, naming the variable', (variable, value, message) => {
    expect(() => loadConfig({ [variable]: value })).toThrow(new ConfigError(variable, message.slice(variable.length + 2)));
  });
});
