import { createAuthStrategy } from '../src';
import { RedisScope } from './support/redis-scope';

describe('the basic strategy', () => {
  let redis: RedisScope;

  beforeEach(() => {
    redis = new RedisScope();
  });

  afterEach(async () => {
    await redis.close();
  });

  it('sends Authorization: Basic base64(username:password), as in RFC 7617', async () => {
    const strategy = createAuthStrategy({ targetId: 't', mode: 'basic', username: 'Aladdin', password: 'open sesame' }, redis.deps());
    await expect(strategy.headers()).resolves.toEqual({ authorization: 'Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==' });
  });

  it('encodes non-ASCII credentials as UTF-8', async () => {
    const strategy = createAuthStrategy({ targetId: 't', mode: 'basic', username: 'test', password: '123£' }, redis.deps());
    await expect(strategy.headers()).resolves.toEqual({ authorization: 'Basic dGVzdDoxMjPCow==' });
  });

  it('writes nothing to Redis', async () => {
    const strategy = createAuthStrategy({ targetId: 't', mode: 'basic', username: 'u', password: 'p' }, redis.deps());
    await strategy.headers();
    await strategy.invalidate();
    await expect(redis.keys()).resolves.toEqual([]);
  });
});
