import { AuthConfigurationError, createAuthStrategy, type AuthMode, type CallbackAuthStrategy, type TargetAuthSettings } from '../src';
import type { FakeTokenEndpoint } from './support/fake-token-endpoint';
import { useTestEnvironment } from './support/test-environment';
import { credentialForms, errorFrom, expectNoSecrets } from './support/secrets';

// The contract every auth mode keeps, whatever it does inside: the delivery worker relies on it alone.

const USERNAME = 'merchant-7';
const PASSWORD = 'pa55-contract-secret';
const ALLOWED_HEADERS = ['authorization'];
// A header value the HTTP client will send as is: visible ASCII and spaces, no CR or LF.
const HEADER_VALUE = /^[\x20-\x7e]*$/;

interface ContractCase {
  mode: AuthMode;
  /** Settings that work against the given token endpoint. */
  settings(endpoint: FakeTokenEndpoint): TargetAuthSettings;
  /** Settings the factory must refuse, with the secrets present somewhere in them. */
  invalidSettings(endpoint: FakeTokenEndpoint): TargetAuthSettings;
}

const cases: ContractCase[] = [
  {
    mode: 'none',
    settings: () => ({ targetId: 'target-none', mode: 'none' }),
    invalidSettings: () => ({ targetId: '', mode: 'none', username: USERNAME, password: PASSWORD }),
  },
  {
    mode: 'basic',
    settings: () => ({ targetId: 'target-basic', mode: 'basic', username: USERNAME, password: PASSWORD }),
    invalidSettings: () => ({ targetId: 'target-basic', mode: 'basic', username: `${USERNAME}:${PASSWORD}`, password: PASSWORD }),
  },
  {
    mode: 'oauth',
    settings: (endpoint) => ({ targetId: 'target-oauth', mode: 'oauth', authUrl: endpoint.url, username: USERNAME, password: PASSWORD }),
    invalidSettings: (endpoint) => ({
      targetId: 'target-oauth',
      mode: 'oauth',
      authUrl: endpoint.url.replace('http://', `http://${USERNAME}:${PASSWORD}@`),
      username: USERNAME,
      password: PASSWORD,
    }),
  },
];

describe.each(cases)('the $mode strategy, like every callback auth strategy,', (contract) => {
  const env = useTestEnvironment();
  let strategy: CallbackAuthStrategy;

  beforeEach(() => {
    strategy = createAuthStrategy(contract.settings(env.endpoint), env.redis.deps());
  });

  it('reports the mode it was created for', () => {
    expect(strategy.mode).toBe(contract.mode);
  });

  it('returns only allowed lower-case header names with values that are safe to send', async () => {
    const headers = await strategy.headers();
    for (const [name, value] of Object.entries(headers)) {
      expect(ALLOWED_HEADERS).toContain(name);
      expect(value).toMatch(HEADER_VALUE);
    }
  });

  it('returns the same headers when called twice', async () => {
    const first = await strategy.headers();
    await expect(strategy.headers()).resolves.toEqual(first);
  });

  it('resolves invalidate() before any headers() call, after one, and twice in a row', async () => {
    await expect(strategy.invalidate()).resolves.toBeUndefined();
    await strategy.headers();
    await expect(strategy.invalidate()).resolves.toBeUndefined();
    await expect(strategy.invalidate()).resolves.toBeUndefined();
  });

  it('returns headers with the same names after invalidate()', async () => {
    const before = await strategy.headers();
    await strategy.invalidate();
    const after = await strategy.headers();
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
  });

  it('refuses unusable settings with an AuthConfigurationError that shows no secret', async () => {
    const error = await errorFrom(() => createAuthStrategy(contract.invalidSettings(env.endpoint), env.redis.deps()));
    expect(error).toBeInstanceOf(AuthConfigurationError);
    expect(error).toMatchObject({ name: 'AuthConfigurationError', code: 'callback_auth_invalid_configuration' });
    expectNoSecrets(error, credentialForms(USERNAME, PASSWORD));
  });
});
