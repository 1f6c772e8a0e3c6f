import { HeraldError } from '@herald/domain';
import { ConfigError, loadDatabaseConfig, loadKeyRotationConfig, testDatabaseUrl } from '../src';

const SECRETS_KEY = '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff';

describe('the database scripts’ settings', () => {
  it('db:migrate reads DATABASE_URL only, and needs no secret in production', () => {
    const config = loadDatabaseConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgres://u@db/x' });
    expect(config).toEqual({ databaseUrl: 'postgres://u@db/x' });
    expect(Object.isFrozen(config)).toBe(true);
    expect(loadDatabaseConfig({}).databaseUrl).toBe('postgresql://postgres@127.0.0.1:5432/herald');
    expect(() => loadDatabaseConfig({ DATABASE_URL: 'mysql://db/x' })).toThrow('DATABASE_URL: must use postgres:// or postgresql://');
  });

  it('db:reencrypt-credentials reads the database and the keyring, and requires SECRETS_KEY in production', () => {
    const config = loadKeyRotationConfig({ NODE_ENV: 'production', SECRETS_KEY, SECRETS_KEY_ID: 'k2', SECRETS_PREVIOUS_KEYS: `k1:${'ab'.repeat(32)}` });
    expect(Object.keys(config).sort()).toEqual(['databaseUrl', 'secretsKey', 'secretsKeyId', 'secretsPreviousKeys']);
    expect(config.secretsKey.toString('hex')).toBe(SECRETS_KEY);
    expect(Object.keys(config.secretsPreviousKeys)).toEqual(['k1']);
    expect(() => loadKeyRotationConfig({ NODE_ENV: 'production' })).toThrow('SECRETS_KEY: is required when NODE_ENV=production');
  });

  it('the test suites read TEST_DATABASE_URL', () => {
    expect(testDatabaseUrl({})).toBe('postgresql://postgres@127.0.0.1:5432/herald_test');
    expect(testDatabaseUrl({ TEST_DATABASE_URL: 'postgres://u@db/t' })).toBe('postgres://u@db/t');
  });
});

describe('ConfigError', () => {
  it('is a HeraldError with the stable code config_invalid and names the variable', () => {
    const error = new ConfigError('PORT', 'must be a whole number, got "x"');
    expect(error).toBeInstanceOf(HeraldError);
    expect(error).toMatchObject({ name: 'ConfigError', code: 'config_invalid', variable: 'PORT', message: 'PORT: must be a whole number, got "x"' });
  });
});
