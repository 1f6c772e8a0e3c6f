import { apiKeyRepository, closeDatabasePool, createDatabasePool, isWellFormedApiKey } from '../src';
import { closedPort } from '@herald/testing';

describe('API key format', () => {
  it.each([
    [`hk_${'A'.repeat(43)}`, true],
    [`hk_${'a1-_'.repeat(10)}abc`, true],
    [`hk_${'A'.repeat(42)}`, false],
    [`hk_${'A'.repeat(44)}`, false],
    [`hk_${'A'.repeat(42)}=`, false],
    [`hk_${'A'.repeat(42)}+`, false],
    [`HK_${'A'.repeat(43)}`, false],
    [`hk_${'A'.repeat(43)}\n`, false],
    ['', false],
  ])('%j is well-formed: %p', (key, expected) => {
    expect(isWellFormedApiKey(key)).toBe(expected);
  });

  it('authenticate answers null for a malformed key without asking the database', async () => {
    // Any query would fail: nothing listens on this port.
    const pool = createDatabasePool(`postgresql://postgres@127.0.0.1:${await closedPort()}/herald`, { connectionTimeoutMs: 500 });
    try {
      const keys = apiKeyRepository(pool);
      await expect(keys.authenticate(`hk_${'x'.repeat(15_500)}`)).resolves.toBeNull();
      await expect(keys.authenticate(`hk_${'x'.repeat(43)}`)).rejects.toThrow();
    } finally {
      await closeDatabasePool(pool);
    }
  });
});
