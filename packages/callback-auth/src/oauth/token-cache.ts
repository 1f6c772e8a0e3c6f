import { createCipheriv, createDecipheriv, createHmac, randomUUID } from 'node:crypto';
import type { RedisClient } from '../types';
import type { TokenRequest } from './token-request';

// Deletes KEYS[1] only while it still holds ARGV[1], in one step: a plain GET then DEL could delete
// a value that another process wrote in between.
const DELETE_IF_EQUAL = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Where a token cache lives and the secret that keys it (see `AuthDependencies`). */
export interface TokenCacheOptions {
  readonly redis: RedisClient;
  readonly keyPrefix: string;
  readonly tokenCacheSecret: Uint8Array;
}

/**
 * The Redis side of one target's OAuth token: the cached token and the lock that lets one process at a
 * time fetch it.
 *
 * Keys: `{prefix}callback-auth:token:{targetId}:{fingerprint}` and `…:lock:…`. Everything is derived
 * from one HMAC-SHA256, under the worker's secret, of (target id, token URL, username, password,
 * and the request's style and scope when not the default):
 * changed settings never meet an old token, and a key name, though visible to whoever can list Redis,
 * cannot be recomputed from a guessed password without that secret (unkeyed, it let a weak password
 * be found offline). The same holds for the encryption key, so reading Redis yields no bearer token.
 *
 * Workers share tokens only when they share the secret. Rotating SECRETS_KEY changes every name and
 * key: each target's token is fetched once more and the old entries expire with their TTL (at most a
 * day), so the cache needs neither SECRETS_PREVIOUS_KEYS nor a migration. During a rolling rotation
 * the old and new workers each keep a token of their own.
 *
 * The token is stored encrypted (AES-256-GCM), with a Redis TTL no longer than its own lifetime. The
 * IV is an HMAC of the token, so one token always encrypts to the same value and `deleteIfCurrent`
 * can compare in Redis; only equal tokens share an IV.
 */
export class TokenCache {
  readonly #redis: RedisClient;
  readonly #tokenKey: string;
  readonly #lockKey: string;
  readonly #encryptionKey: Buffer;
  readonly #ivKey: Buffer;

  constructor(options: TokenCacheOptions, request: TokenRequest) {
    const { targetId, url, credentials, style, scope } = request;
    // The request's style and scope change which token the endpoint issues. They join the material
    // only when not the default, so that targets set before they existed keep their key names (and
    // their cached tokens) across the upgrade.
    const requestShape = style === 'spec' && scope === undefined ? [] : [style, scope ?? null];
    const settingsKey = createHmac('sha256', options.tokenCacheSecret)
      .update(JSON.stringify(['herald oauth token cache', targetId, url, credentials.username, credentials.password, ...requestShape]))
      .digest();
    const derive = (purpose: string): Buffer => createHmac('sha256', settingsKey).update(purpose).digest();
    const fingerprint = derive('key name').toString('hex');
    this.#encryptionKey = derive('encryption');
    this.#ivKey = derive('iv');
    this.#redis = options.redis;
    this.#tokenKey = `${options.keyPrefix}callback-auth:token:${targetId}:${fingerprint}`;
    this.#lockKey = `${options.keyPrefix}callback-auth:lock:${targetId}:${fingerprint}`;
  }

  /** The key of the cached token; exposed for tests and operators, it reveals no secret. */
  get tokenKey(): string {
    return this.#tokenKey;
  }

  /** The key of the fetch lock. */
  get lockKey(): string {
    return this.#lockKey;
  }

  /** The cached token, or undefined when there is none or it cannot be decrypted (then it is fetched anew). */
  async read(): Promise<string | undefined> {
    const stored = await this.#redis.get(this.#tokenKey);
    return stored === null ? undefined : this.#decrypt(stored);
  }

  async store(token: string, ttlMs: number): Promise<void> {
    await this.#redis.set(this.#tokenKey, this.#encrypt(token), 'PX', ttlMs);
  }

  /** Deletes the cached token only if it is still `token`, so a fresher one from another process survives. */
  async deleteIfCurrent(token: string): Promise<void> {
    await this.#redis.eval(DELETE_IF_EQUAL, 1, this.#tokenKey, this.#encrypt(token));
  }

  /** base64url of iv ‖ tag ‖ ciphertext. */
  #encrypt(token: string): string {
    const iv = createHmac('sha256', this.#ivKey).update(token).digest().subarray(0, IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#encryptionKey, iv);
    const ciphertext = Buffer.concat([cipher.update(token, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url');
  }

  #decrypt(stored: string): string | undefined {
    const bytes = Buffer.from(stored, 'base64url');
    if (bytes.length <= IV_BYTES + TAG_BYTES) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#encryptionKey, bytes.subarray(0, IV_BYTES));
      decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      // Written under other credentials or tampered with: a cache miss, never a wrong token.
      return undefined;
    }
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
