import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { AuthDependencies } from '../../src';

// The Redis every test uses; REDIS_URL set in the shell is the running system's, not the tests'.
const REDIS_URL = 'redis://127.0.0.1:6379';

/**
 * A fresh key prefix on the real Redis and the clients opened under it. `close()` deletes every key
 * under the prefix and quits the clients, so tests never see each other's tokens.
 */
export class RedisScope {
  readonly keyPrefix = `test:${randomBytes(6).toString('hex')}:`;
  /** The token cache secret of every simulated worker of this scope, as SECRETS_KEY is shared by a deployment's workers. */
  readonly tokenCacheSecret = randomBytes(32);
  readonly #clients: Redis[] = [];

  /** A new connection: one per simulated worker process. */
  client(): Redis {
    const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    this.#clients.push(client);
    return client;
  }

  /** Dependencies for a strategy on its own new connection, with `options` on top. */
  deps(options: Partial<AuthDependencies> = {}): AuthDependencies {
    return { redis: this.client(), keyPrefix: this.keyPrefix, tokenCacheSecret: this.tokenCacheSecret, ...options };
  }

  /** Every key under this scope's prefix. */
  async keys(): Promise<string[]> {
    const admin = this.#clients[0] ?? this.client();
    const found: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await admin.scan(cursor, 'MATCH', `${this.keyPrefix}*`, 'COUNT', 1000);
      found.push(...batch);
      cursor = next;
    } while (cursor !== '0');
    return found;
  }

  async close(): Promise<void> {
    const keys = await this.keys();
    if (keys.length > 0) await this.#clients[0]!.del(...keys);
    await Promise.all(this.#clients.map((client) => client.quit()));
  }
}
