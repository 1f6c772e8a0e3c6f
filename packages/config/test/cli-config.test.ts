import { randomBytes } from 'node:crypto';
import { loadCliConfig, loadDemoConfig } from '../src';

describe('loadCliConfig', () => {
  it('calls the events-api on 127.0.0.1 at PORT when HERALD_API_URL is not set', () => {
    expect(loadCliConfig({ PORT: '4123' }).apiUrl).toBe('http://127.0.0.1:4123');
    expect(loadCliConfig({}).apiUrl).toBe('http://127.0.0.1:3000');
  });

  it('prefers HERALD_API_URL over PORT', () => {
    expect(loadCliConfig({ PORT: '4123', HERALD_API_URL: 'https://herald.internal' }).apiUrl).toBe('https://herald.internal');
  });

  it('refuses a PORT that is not a port, naming it', () => {
    expect(() => loadCliConfig({ PORT: 'eighty' })).toThrow(/PORT/);
  });
});

describe('loadDemoConfig', () => {
  it('adds the ingest token to the CLI settings, the public development one by default', () => {
    expect(loadDemoConfig({ PORT: '4123' })).toEqual({ apiUrl: 'http://127.0.0.1:4123', adminToken: 'dev-admin-token', ingestToken: 'dev-ingest-token' });
    expect(loadDemoConfig({ INGEST_TOKEN: 'i'.repeat(40) }).ingestToken).toBe('i'.repeat(40));
  });

  it('requires a real ingest token in production', () => {
    expect(() => loadDemoConfig({ NODE_ENV: 'production', ADMIN_TOKEN: randomBytes(30).toString('base64url') })).toThrow(/INGEST_TOKEN/);
  });
});
