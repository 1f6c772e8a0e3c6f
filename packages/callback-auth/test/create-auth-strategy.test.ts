import {
  AuthConfigurationError,
  BasicAuthStrategy,
  NoAuthStrategy,
  OAuthStrategy,
  UnknownAuthModeError,
  createAuthStrategy,
  type AuthDependencies,
  type TargetAuthSettings,
} from '../src';
import { RedisScope } from './support/redis-scope';
import { credentialForms, errorFrom, expectNoSecrets } from './support/secrets';

const USERNAME = 'merchant';
const PASSWORD = 'factory-secret-41';
const oauth = (overrides: Partial<TargetAuthSettings> = {}): TargetAuthSettings => ({
  targetId: 'target-1',
  mode: 'oauth',
  authUrl: 'https://auth.example.test/oauth/token',
  username: USERNAME,
  password: PASSWORD,
  ...overrides,
});

describe('createAuthStrategy', () => {
  let redis: RedisScope;
  let deps: AuthDependencies;

  beforeEach(() => {
    redis = new RedisScope();
    deps = redis.deps();
  });

  afterEach(async () => {
    await redis.close();
  });

  it('builds the strategy of each known mode', () => {
    expect(createAuthStrategy({ targetId: 't', mode: 'none' }, deps)).toBeInstanceOf(NoAuthStrategy);
    expect(createAuthStrategy({ targetId: 't', mode: 'basic', username: USERNAME, password: PASSWORD }, deps)).toBeInstanceOf(BasicAuthStrategy);
    expect(createAuthStrategy(oauth(), deps)).toBeInstanceOf(OAuthStrategy);
  });

  it('throws an UnknownAuthModeError naming the target and the mode when the mode is unknown', async () => {
    const settings = { targetId: 'target-9', mode: 'digest' } as unknown as TargetAuthSettings;
    const error = await errorFrom(() => createAuthStrategy(settings, deps));
    expect(error).toBeInstanceOf(UnknownAuthModeError);
    expect(error).toMatchObject({ name: 'UnknownAuthModeError', code: 'callback_auth_unknown_mode', targetId: 'target-9', mode: 'digest' });
    expect(error.message).toContain('"digest"');
  });

  it('throws an AuthConfigurationError when the targetId is empty', async () => {
    const error = await errorFrom(() => createAuthStrategy({ targetId: '', mode: 'none' }, deps));
    expect(error).toMatchObject({ name: 'AuthConfigurationError', field: 'targetId' });
  });

  it.each([
    ['basic', 'username', { username: undefined }],
    ['basic', 'username', { username: '' }],
    ['basic', 'username', { username: 'mer:chant' }],
    ['basic', 'password', { password: undefined }],
    ['basic', 'password', { password: '' }],
    ['oauth', 'username', { username: undefined }],
    ['oauth', 'password', { password: undefined }],
    ['oauth', 'authUrl', { authUrl: undefined }],
    ['oauth', 'authUrl', { authUrl: '' }],
    ['oauth', 'authUrl', { authUrl: '/oauth/token' }],
    ['oauth', 'authUrl', { authUrl: 'not a url' }],
    ['oauth', 'authUrl', { authUrl: 'ftp://auth.example.test/token' }],
    ['oauth', 'authUrl', { authUrl: `https://${USERNAME}:${PASSWORD}@auth.example.test/token` }],
    ['oauth', 'authUrl', { authUrl: 'https://auth.example.test/token?grant_type=password' }],
  ] as const)('rejects %s settings with a bad %s (%j) and shows no secret', async (mode, field, overrides) => {
    const error = await errorFrom(() => createAuthStrategy(oauth({ mode, ...overrides }), deps));
    expect(error).toBeInstanceOf(AuthConfigurationError);
    expect(error).toMatchObject({ code: 'callback_auth_invalid_configuration', field });
    expectNoSecrets(error, credentialForms(USERNAME, PASSWORD));
  });

  it.each([
    ['tokenRequestTimeoutMs', 0],
    ['tokenRequestTimeoutMs', 1.5],
    ['maxTokenResponseBytes', -1],
    ['expiryMarginMs', -1],
    ['tokenWaitMs', Number.NaN],
    ['tokenPollIntervalMs', 0],
  ] as const)('rejects the oauth option %s = %p at once', async (option, value) => {
    const error = await errorFrom(() => createAuthStrategy(oauth(), { ...deps, [option]: value }));
    expect(error).toMatchObject({ name: 'AuthConfigurationError', field: option });
  });

  it.each([
    ['no', undefined],
    ['a 16-byte', Buffer.alloc(16, 7)],
    ['a string', 'x'.repeat(32)],
  ])('rejects oauth settings with %s tokenCacheSecret, which would leave key names guessable', async (_case, tokenCacheSecret) => {
    const error = await errorFrom(() => createAuthStrategy(oauth(), { ...deps, tokenCacheSecret } as AuthDependencies));
    expect(error).toMatchObject({ name: 'AuthConfigurationError', field: 'tokenCacheSecret' });
  });

  it('rejects oauth settings without a Redis client', async () => {
    const error = await errorFrom(() => createAuthStrategy(oauth(), { keyPrefix: 'x:' } as AuthDependencies));
    expect(error).toMatchObject({ name: 'AuthConfigurationError', field: 'redis' });
  });
});
