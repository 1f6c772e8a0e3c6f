import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { SecretsKeyring } from '@herald/config';
import { HeraldError } from '@herald/domain';

// Encryption at rest of a notification target's credentials (username and password).
//
// Ciphertext format, self-describing so that it can be read back after a key rotation:
//   v1.<keyId>.<iv>.<tag>.<ciphertext>      (iv, tag and ciphertext in base64url, no padding)
// AES-256-GCM with a random 12-byte IV per encryption and a 16-byte tag. The additional
// authenticated data is `v1.<keyId>.<targetId>`: a ciphertext copied onto another target's row
// (or relabelled with another key id) fails to decrypt instead of lending its credentials.
//
// Key rotation. `decrypt` takes the key named in the ciphertext from a keyring, so several keys
// can be readable at once: the current one (SECRETS_KEY as SECRETS_KEY_ID) and the retired ones
// (SECRETS_PREVIOUS_KEYS). To rotate:
//   1. deploy with the new key as SECRETS_KEY / SECRETS_KEY_ID and the old one in
//      SECRETS_PREVIOUS_KEYS (both services);
//   2. run `pnpm db:reencrypt-credentials`: it rewrites every row under the current key;
//   3. remove the old key once it reports no row left under another key.

const VERSION = 'v1';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;

/** A user name and password given for basic or oauth callbacks. */
export interface TargetCredentials {
  readonly username: string;
  readonly password: string;
}

/** Keys that may have written a stored ciphertext, by key id; each 32 bytes. */
export type Keyring = Readonly<Record<string, Buffer>>;

export interface CredentialsCipherOptions {
  /** Id of the key that encrypts from now on; must be in `keyring` and match `[A-Za-z0-9_-]{1,32}`. */
  currentKeyId: string;
  /** Every key that may be needed to decrypt, by id. Copied: later changes to the object are not seen. */
  keyring: Keyring;
}

export interface EncryptedCredentials {
  /** The self-describing ciphertext, for the `credentials` column. */
  ciphertext: string;
  /** The key that wrote it, for the `credentials_key_id` column (so rows to re-encrypt can be found). */
  keyId: string;
}

export interface CredentialsCipher {
  /** Id of the key `encrypt` uses. */
  readonly currentKeyId: string;
  /** Encrypts the credentials of target `targetId` with the current key. */
  encrypt(credentials: TargetCredentials, targetId: string): EncryptedCredentials;
  /** Decrypts credentials stored for target `targetId`; throws CredentialsCipherError on any failure. */
  decrypt(ciphertext: string, targetId: string): TargetCredentials;
}

/** Why a ciphertext could not be read. */
export type CredentialsCipherFailure =
  /** Not a v1 ciphertext of this format. */
  | 'malformed'
  /** Written with a key id that is not in the keyring. */
  | 'unknown_key'
  /** The tag does not match: tampered, copied from another target, or encrypted with other key material. */
  | 'authentication_failed'
  /** Decrypted, but not a username and password. */
  | 'invalid_content';

/** Stored credentials cannot be read. The message names the target and key id, never any plaintext. */
export class CredentialsCipherError extends HeraldError {
  readonly code = 'credentials_unreadable';
  constructor(
    readonly reason: CredentialsCipherFailure,
    readonly targetId: string,
    readonly keyId?: string,
  ) {
    super(`Credentials of notification target ${targetId} cannot be decrypted: ${reason.replaceAll('_', ' ')}${keyId ? ` (key ${keyId})` : ''}.`);
  }
}

/** AES-256-GCM encryption of target credentials; refuses a bad keyring at once. */
export function createCredentialsCipher(options: CredentialsCipherOptions): CredentialsCipher {
  const keyring = new Map<string, Buffer>();
  for (const [id, key] of Object.entries(options.keyring)) {
    if (!KEY_ID.test(id)) throw new TypeError(`Key id "${id}" must match ${KEY_ID}.`);
    if (key.length !== KEY_BYTES) throw new TypeError(`Key "${id}" must be ${KEY_BYTES} bytes, got ${key.length}.`);
    keyring.set(id, Buffer.from(key));
  }
  const currentKeyId = options.currentKeyId;
  const currentKey = keyring.get(currentKeyId);
  if (!currentKey) throw new TypeError(`The current key id "${currentKeyId}" is not in the keyring.`);

  return {
    currentKeyId,

    encrypt(credentials, targetId) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', currentKey, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(additionalData(currentKeyId, targetId));
      const plaintext = Buffer.from(JSON.stringify({ username: credentials.username, password: credentials.password }), 'utf8');
      const encrypted = Buffer.concat([cipher.update(plaintext), cipher.final()]);
      plaintext.fill(0);
      const parts = [VERSION, currentKeyId, iv, cipher.getAuthTag(), encrypted].map((p) => (typeof p === 'string' ? p : p.toString('base64url')));
      return { ciphertext: parts.join('.'), keyId: currentKeyId };
    },

    decrypt(ciphertext, targetId) {
      const parts = ciphertext.split('.');
      if (parts.length !== 5 || parts[0] !== VERSION) throw new CredentialsCipherError('malformed', targetId);
      const [, keyId, ivText, tagText, dataText] = parts as [string, string, string, string, string];
      const iv = fromBase64Url(ivText);
      const tag = fromBase64Url(tagText);
      const data = fromBase64Url(dataText);
      if (iv?.length !== IV_BYTES || tag?.length !== TAG_BYTES || !data) throw new CredentialsCipherError('malformed', targetId, keyId);
      const key = keyring.get(keyId);
      if (!key) throw new CredentialsCipherError('unknown_key', targetId, keyId);

      let plaintext: Buffer;
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
        decipher.setAAD(additionalData(keyId, targetId));
        decipher.setAuthTag(tag);
        plaintext = Buffer.concat([decipher.update(data), decipher.final()]);
      } catch {
        // Node's own message says nothing useful and the cause is always the same: the tag.
        throw new CredentialsCipherError('authentication_failed', targetId, keyId);
      }
      try {
        return parseCredentials(plaintext.toString('utf8'), targetId, keyId);
      } finally {
        plaintext.fill(0);
      }
    },
  };
}

/** The cipher of a service: the current key and the previous ones of the configuration (see the rotation note above). */
export function credentialsCipherFromConfig(config: SecretsKeyring): CredentialsCipher {
  return createCredentialsCipher({
    currentKeyId: config.secretsKeyId,
    keyring: { ...config.secretsPreviousKeys, [config.secretsKeyId]: config.secretsKey },
  });
}

function additionalData(keyId: string, targetId: string): Buffer {
  return Buffer.from(`${VERSION}.${keyId}.${targetId}`, 'utf8');
}

// Buffer.from(..., 'base64url') skips characters it does not know; only a clean round trip counts.
function fromBase64Url(text: string): Buffer | undefined {
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : undefined;
}

function parseCredentials(json: string, targetId: string, keyId: string): TargetCredentials {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    // Not the JSON.parse message: it quotes the text it choked on.
    throw new CredentialsCipherError('invalid_content', targetId, keyId);
  }
  const { username, password } = (value ?? {}) as Record<string, unknown>;
  if (typeof username !== 'string' || typeof password !== 'string') throw new CredentialsCipherError('invalid_content', targetId, keyId);
  return { username, password };
}
