import { ConfigError, parseRedisUrl, redisKeyPrefix } from '../src';

describe('parseRedisUrl', () => {
  it('leaves a one-server URL to ioredis as it is', () => {
    expect(parseRedisUrl('rediss://user:secret@cache:6380/2')).toEqual({ kind: 'single', url: 'rediss://user:secret@cache:6380/2' });
  });

  it('reads the seed nodes, the credentials and TLS of a cluster URL', () => {
    expect(parseRedisUrl('rediss+cluster://herald:p%40ss@node-1.example:6379,10.0.0.2:7000,[::1]:7001/0')).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'node-1.example', port: 6379 },
        { host: '10.0.0.2', port: 7000 },
        { host: '::1', port: 7001 },
      ],
      username: 'herald',
      password: 'p@ss',
      tls: true,
    });
  });

  it('reads a password without a user name, and no TLS from redis+cluster://', () => {
    expect(parseRedisUrl('redis+cluster://:secret@127.0.0.1:7000')).toMatchObject({ username: undefined, password: 'secret', tls: false });
    expect(parseRedisUrl('redis+cluster://127.0.0.1:7000')).toMatchObject({ username: undefined, password: undefined, tls: false });
  });

  it.each([
    ['redis+cluster://', /a cluster URL must be/],
    ['redis+cluster://node-1:7000/1', /a cluster URL must be/],
    ['redis+cluster://node-1:7000?tls=true', /a cluster URL must be/],
    ['redis+cluster://node-1:7000,,node-2:7001', /"" is not a host:port cluster node/],
    ['redis+cluster://node-1:99999', /"node-1:99999" is not a host:port cluster node/],
    ['redis+cluster://u:%zz@node-1:7000', /badly percent-encoded credentials/],
    ['memcached://cache:11211', /must use redis:\/\/ or rediss:\/\/ \(one server\), or redis\+cluster:\/\/ or rediss\+cluster:\/\//],
  ])('rejects %s naming REDIS_URL', (value, message) => {
    let error: unknown;
    try {
      parseRedisUrl(value);
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe('REDIS_URL');
    expect((error as ConfigError).message).toMatch(message);
  });

  it('never repeats a password in its error', () => {
    expect(() => parseRedisUrl('redis+cluster://u:hunter2-secret@node-1')).toThrow(/^(?!.*hunter2-secret)/s);
  });
});

describe('redisKeyPrefix', () => {
  it('hash-tags the prefix on a cluster and keeps it as it is on one server', () => {
    expect(redisKeyPrefix('herald', parseRedisUrl('redis+cluster://node-1:7000'))).toBe('{herald}');
    expect(redisKeyPrefix('herald', parseRedisUrl('redis://node-1:7000'))).toBe('herald');
  });
});
