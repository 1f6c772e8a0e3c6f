import { createHash, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { TokenRequest } from './token-request';

// Deletes KEYS[1] only while it still holds ARGV[1], in one step: a plain GET then DEL could delete
// a value that another process wrote in between.
const DELETE_IF_EQUAL = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/**
 * The Redis side of one target's OAuth token: the cached token and the lock that lets one process at a
 * time fetch it.
 *
 * Keys: `{prefix}callback-auth:token:{targetId}:{fingerprint}` and `…:lock:…`, where the fingerprint is
 * the SHA-256 of (token URL, username, password): changed settings never meet an old token, and the
 * secret itself never appears in a key.
 *
 * The token is stored in plaintext with a Redis TTL no longer than its own lifetime: it is a short-lived
 * bearer credential, Redis sits inside the service's trust boundary next to the job data, and encrypting
 * it would need a key whose management this module should not own.
 */
export class TokenCache {
  readonly #redis: Redis;
  readonly #tokenKey: string;
  readonly #lockKey: string;

  constructor(redis: Redis, keyPrefix: string, request: TokenRequest) {
    const { targetId, url, credentials } = request;
    const fingerprint = createHash('sha256')
      .update(JSON.stringify([url, credentials.username, credentials.password]))
      .digest('hex');
    this.#redis = redis;
    this.#tokenKey = `${keyPrefix}callback-auth:token:${targetId}:${fingerprint}`;
    this.#lockKey = `${keyPrefix}callback-auth:lock:${targetId}:${fingerprint}`;
  }

  /** The key of the cached token; exposed for tests and operators, it holds no secret. */
  get tokenKey(): string {
    return this.#tokenKey;
  }

  /** The key of the fetch lock. */
  get lockKey(): string {
    return this.#lockKey;
  }

  async read(): Promise<string | undefined> {
    return (await this.#redis.get(this.#tokenKey)) ?? undefined;
  }

  async store(token: string, ttlMs: number): Promise<void> {
    await this.#redis.set(this.#tokenKey, token, 'PX', ttlMs);
  }

  /** Deletes the cached token only if it is still `token`, so a fresher one from another process survives. */
  async deleteIfCurrent(token: string): Promise<void> {
    await this.#redis.eval(DELETE_IF_EQUAL, 1, this.#tokenKey, token);
  }

  /** Takes the fetch lock for `ttlMs`; returns the holder id to pass to `unlock`, or undefined if taken. */
  async tryLock(ttlMs: number): Promise<string | undefined> {
    const holder = randomUUID();
    const reply = await this.#redis.set(this.#lockKey, holder, 'PX', ttlMs, 'NX');
    return reply === 'OK' ? holder : undefined;
  }

  /** Releases the lock if this holder still has it (it may have expired and been taken by another). */
  async unlock(holder: string): Promise<void> {
    await this.#redis.eval(DELETE_IF_EQUAL, 1, this.#lockKey, holder);
  }
}
