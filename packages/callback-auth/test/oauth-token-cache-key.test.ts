import { createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { createAuthStrategy, type AuthDependencies, type TargetAuthSettings } from '../src';
import { tokenRequestUrl } from '../src/oauth/token-endpoint';
import { useTestEnvironment } from './support/test-environment';

// Whoever can list Redis keys sees the token cache's key names; with a target's URL and user name
// (both far less guarded than its password) they must not be able to test password guesses offline.
describe('the oauth token cache key names', () => {
  const env = useTestEnvironment();
  const settings = (): TargetAuthSettings => ({
    targetId: 'target-1',
    mode: 'oauth',
    authUrl: env.endpoint.url,
    username: 'merchant',
    password: 'weak-password',
  });

  /** Fingerprints an attacker could compute from what the settings hold, without any worker secret. */
  const guessableFingerprints = (password: string): string[] => {
    const { targetId, authUrl, username } = settings();
    const url = tokenRequestUrl(targetId, authUrl);
    const material = JSON.stringify([url, username, password]);
    return [
      Buffer.from(hkdfSync('sha256', material, targetId, 'herald token cache: key name', 32)).toString('hex'),
      createHash('sha256').update(material).digest('hex'),
      createHmac('sha256', targetId).update(material).digest('hex'),
    ];
  };

  const keyNames = async (): Promise<string[]> => (await env.redis.keys()).map((key) => key.slice(env.redis.keyPrefix.length));

  it('cannot be reproduced from the URL, user name and password alone', async () => {
    await createAuthStrategy(settings(), env.redis.deps()).headers();
    const names = await keyNames();
    expect(names).toEqual([expect.stringMatching(/^callback-auth:token:target-1:[0-9a-f]{64}$/)]);
    for (const fingerprint of guessableFingerprints('weak-password')) {
      for (const name of names) expect(name).not.toContain(fingerprint);
    }
  });

  it('differ between workers with different secrets, which then do not share a token', async () => {
    const otherSecret = (): Partial<AuthDependencies> => ({ tokenCacheSecret: randomBytes(32) });
    await expect(createAuthStrategy(settings(), env.redis.deps()).headers()).resolves.toEqual({ authorization: 'Bearer token-1' });
    await expect(createAuthStrategy(settings(), env.redis.deps(otherSecret())).headers()).resolves.toEqual({ authorization: 'Bearer token-2' });
    expect(env.endpoint.requests).toHaveLength(2);
    expect((await keyNames()).filter((name) => name.startsWith('callback-auth:token:'))).toHaveLength(2);
  });

  it('are the same for workers with the same secret, which share one token', async () => {
    await createAuthStrategy(settings(), env.redis.deps()).headers();
    await expect(createAuthStrategy(settings(), env.redis.deps()).headers()).resolves.toEqual({ authorization: 'Bearer token-1' });
    expect(env.endpoint.requests).toHaveLength(1);
  });
});
