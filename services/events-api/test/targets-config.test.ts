import { ConfigError, loadApiConfig, loadCliConfig } from '@herald/config';

const PRODUCTION = {
  NODE_ENV: 'production',
  ADMIN_TOKEN: 'admin-7Kq2Vx9Lm4Rt8Wz3Np6Bd1Hf5Jc0Gs2Ye',
  INGEST_TOKEN: 'ingest-Qw3Er8Ty1Ui6Op4As9Df2Gh7Jk5Lz0Xc',
  SECRETS_KEY: '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff',
  DASHBOARD_PASSWORD: 'dash-Mn4Bv8Cx2Zl6',
};

describe('the configuration of notification targets', () => {
  it('allows private targets outside production and refuses them in production by default', () => {
    expect(loadApiConfig({}).allowPrivateTargets).toBe(true);
    expect(loadApiConfig({ NODE_ENV: 'test' }).allowPrivateTargets).toBe(true);
    expect(loadApiConfig(PRODUCTION).allowPrivateTargets).toBe(false);
    expect(loadApiConfig({ ...PRODUCTION, ALLOW_PRIVATE_TARGETS: 'true' }).allowPrivateTargets).toBe(true);
    expect(loadApiConfig({ ALLOW_PRIVATE_TARGETS: 'false' }).allowPrivateTargets).toBe(false);
  });

  it('refuses an ALLOW_PRIVATE_TARGETS that is not true or false, naming the variable', () => {
    expect(() => loadApiConfig({ ALLOW_PRIVATE_TARGETS: 'yes' })).toThrow(ConfigError);
    expect(() => loadApiConfig({ ALLOW_PRIVATE_TARGETS: '1' })).toThrow(/^ALLOW_PRIVATE_TARGETS: must be true or false/);
  });

  it('reads TARGET_HOST_ALLOWLIST as lower-case hosts without trailing dots, frozen', () => {
    expect(loadApiConfig({}).targetHostAllowlist).toEqual([]);
    const { targetHostAllowlist } = loadApiConfig({ TARGET_HOST_ALLOWLIST: ' Hooks.Internal.Example. , localhost,,10.0.0.5,::1 ' });
    expect(targetHostAllowlist).toEqual(['hooks.internal.example', 'localhost', '10.0.0.5', '::1']);
    expect(Object.isFrozen(targetHostAllowlist)).toBe(true);
  });

  it.each(['http://example.com', 'exa mple.com', 'host_with/slash', '-leading-hyphen.example'])(
    'refuses %p in TARGET_HOST_ALLOWLIST, naming the variable',
    (host) => {
      expect(() => loadApiConfig({ TARGET_HOST_ALLOWLIST: `ok.example,${host}` })).toThrow(/^TARGET_HOST_ALLOWLIST: ".*" is not a host name or IP address$/);
    },
  );
});

describe('the configuration of the herald CLI', () => {
  it('calls the local events-api with the development admin token by default', () => {
    expect(loadCliConfig({})).toEqual({ apiUrl: 'http://127.0.0.1:3000', adminToken: 'dev-admin-token' });
  });

  it('reads HERALD_API_URL and ADMIN_TOKEN, and nothing else, even in production', () => {
    const config = loadCliConfig({
      NODE_ENV: 'production',
      HERALD_API_URL: 'https://herald.internal:8443',
      ADMIN_TOKEN: 'admin-7Kq2Vx9Lm4Rt8Wz3Np6Bd1Hf5Jc0Gs2Ye',
    });
    expect(config).toEqual({ apiUrl: 'https://herald.internal:8443', adminToken: 'admin-7Kq2Vx9Lm4Rt8Wz3Np6Bd1Hf5Jc0Gs2Ye' });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('refuses a HERALD_API_URL that is not http(s) and a missing token in production', () => {
    expect(() => loadCliConfig({ HERALD_API_URL: 'ftp://x' })).toThrow(/^HERALD_API_URL: must use http:\/\/ or https:\/\//);
    expect(() => loadCliConfig({ NODE_ENV: 'production' })).toThrow(/^ADMIN_TOKEN: is required/);
  });
});
