import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { SecretsKeyring } from '@herald/config';
import { HeraldError, isSigningSecret, type SigningSecrets } from '@herald/domain';

// Encryption at rest of a notification target's secrets: its credentials (username and password)
// and its Standard Webhooks signing secrets.
//
// Ciphertext format, self-describing so that it can be read back after a key rotation:
//   v1.<keyId>.<iv>.<tag>.<ciphertext>      (iv, tag and ciphertext in base64url, no padding)
// AES-256-GCM with a random 12-byte IV per encryption and a 16-byte tag. The additional
// authenticated data is `v1.<keyId>.<targetId>` for credentials and
// `v1.<keyId>.<targetId>.signing-secrets` for signing secrets: a ciphertext copied onto another
// target's row, or into the other column (or relabelled with another key id), fails to decrypt
// instead of lending its secrets.
//
// Key rotation. `decrypt` takes the key named in the ciphertext from a keyring, so several keys
// can be readable at once: the current one (SECRETS_KEY as SECRETS_KEY_ID) and the retired ones
// (SECRETS_PREVIOUS_KEYS). To rotate:
//   1. deploy with the new key as SECRETS_KEY / SECRETS_KEY_ID and the old one in
//      SECRETS_PREVIOUS_KEYS (both services);
//   2. run `pnpm db:reencrypt-credentials`: it rewrites every row's credentials and signing
//      secrets under the current key;
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
  /** The self-describing ciphertext, for the `credentials` (or `signing_secrets`) column. */
  ciphertext: string;
  /** The key that wrote it, for the `credentials_key_id` (or `signing_key_id`) column (so rows to re-encrypt can be found). */
  keyId: string;
}

export interface CredentialsCipher {
  /** Id of the key `encrypt` uses. */
  readonly currentKeyId: string;
  /** Encrypts the credentials of target `targetId` with the current key. */
  encrypt(credentials: TargetCredentials, targetId: string): EncryptedCredentials;
  /** Decrypts credentials stored for target `targetId`; throws CredentialsCipherError on any failure. */
  decrypt(ciphertext: string, targetId: string): TargetCredentials;
  /** Encrypts the signing secrets of target `targetId` with the current key. */
  encryptSigningSecrets(secrets: SigningSecrets, targetId: string): EncryptedCredentials;
  /** Decrypts signing secrets stored for target `targetId`; throws CredentialsCipherError on any failure. */
  decryptSigningSecrets(ciphertext: string, targetId: string): SigningSecrets;
}

/** Which of a target's secrets a ciphertext holds. */
export type EncryptedSecret = 'credentials' | 'signing secrets';

/** Why a ciphertext could not be read. */
export type CredentialsCipherFailure =
  /** Not a v1 ciphertext of this format. */
  | 'malformed'
  /** Written with a key id that is not in the keyring. */
  | 'unknown_key'
  /** The tag does not match: tampered, copied from another target, or encrypted with other key material. */
  | 'authentication_failed'
  /** Decrypted, but not a username and password (or not signing secrets). */
  | 'invalid_content';

/** Stored credentials (or signing secrets) cannot be read. The message names the target and key id, never any plaintext. */
export class CredentialsCipherError extends HeraldError {
  readonly code = 'credentials_unreadable';
  constructor(
    readonly reason: CredentialsCipherFailure,
    readonly targetId: string,
    readonly keyId?: string,
    readonly secret: EncryptedSecret = 'credentials',
  ) {
    const what = secret === 'credentials' ? 'Credentials' : 'Signing secrets';
    super(`${what} of notification target ${targetId} cannot be decrypted: ${reason.replaceAll('_', ' ')}${keyId ? ` (key ${keyId})` : ''}.`);
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

  /** The JSON of `value`, encrypted for target `targetId` with the current key. */
  const seal = (value: object, targetId: string, secret: EncryptedSecret): EncryptedCredentials => {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', currentKey, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(additionalData(currentKeyId, targetId, secret));
    const plaintext = Buffer.from(JSON.stringify(value), 'utf8');
    const encrypted = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    plaintext.fill(0);
    const parts = [VERSION, currentKeyId, iv, cipher.getAuthTag(), encrypted].map((p) => (typeof p === 'string' ? p : p.toString('base64url')));
    return { ciphertext: parts.join('.'), keyId: currentKeyId };
  };

  /** The value `seal` encrypted, checked by `parse` (which throws `invalid_content`). */
  const open = <T>(ciphertext: string, targetId: string, secret: EncryptedSecret, parse: (value: unknown) => T | undefined): T => {
    const failed = (reason: CredentialsCipherFailure, keyId?: string) => new CredentialsCipherError(reason, targetId, keyId, secret);
    const parts = ciphertext.split('.');
    if (parts.length !== 5 || parts[0] !== VERSION) throw failed('malformed');
    const [, keyId, ivText, tagText, dataText] = parts as [string, string, string, string, string];
    const iv = fromBase64Url(ivText);
    const tag = fromBase64Url(tagText);
    const data = fromBase64Url(dataText);
    if (iv?.length !== IV_BYTES || tag?.length !== TAG_BYTES || !data) throw failed('malformed', keyId);
    const key = keyring.get(keyId);
    if (!key) throw failed('unknown_key', keyId);

    let plaintext: Buffer;
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(additionalData(keyId, targetId, secret));
      decipher.setAuthTag(tag);
      plaintext = Buffer.concat([decipher.update(data), decipher.final()]);
    } catch {
      // Node's own message says nothing useful and the cause is always the same: the tag.
      throw failed('authentication_failed', keyId);
    }
    try {
      let value: unknown;
      try {
        value = JSON.parse(plaintext.toString('utf8'));
      } catch {
        // Not the JSON.parse message: it quotes the text it choked on.
        throw failed('invalid_content', keyId);
      }
      const parsed = parse(value);
      if (parsed === undefined) throw failed('invalid_content', keyId);
      return parsed;
    } finally {
      plaintext.fill(0);
    }
  };

  return {
    currentKeyId,
    encrypt: ({ username, password }, targetId) => seal({ username, password }, targetId, 'credentials'),
    decrypt: (ciphertext, targetId) => open(ciphertext, targetId, 'credentials', parseCredentials),
    encryptSigningSecrets: ({ current, previous }, targetId) => seal({ current, previous }, targetId, 'signing secrets'),
    decryptSigningSecrets: (ciphertext, targetId) => open(ciphertext, targetId, 'signing secrets', parseSigningSecrets),
  };
}

/** The cipher of a service: the current key and the previous ones of the configuration (see the rotation note above). */
export function credentialsCipherFromConfig(config: SecretsKeyring): CredentialsCipher {
  return createCredentialsCipher({
    currentKeyId: config.secretsKeyId,
    keyring: { ...config.secretsPreviousKeys, [config.secretsKeyId]: config.secretsKey },
  });
}

function additionalData(keyId: string, targetId: string, secret: EncryptedSecret): Buffer {
  // Credentials keep the data they were first written with, so that stored rows still decrypt.
  const purpose = secret === 'credentials' ? '' : '.signing-secrets';
  return Buffer.from(`${VERSION}.${keyId}.${targetId}${purpose}`, 'utf8');
}

// Buffer.from(..., 'base64url') skips characters it does not know; only a clean round trip counts.
function fromBase64Url(text: string): Buffer | undefined {
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : undefined;
}

function parseCredentials(value: unknown): TargetCredentials | undefined {
  const { username, password } = (value ?? {}) as Record<string, unknown>;
  return typeof username === 'string' && typeof password === 'string' ? { username, password } : undefined;
}

function parseSigningSecrets(value: unknown): SigningSecrets | undefined {
  const { current, previous } = (value ?? {}) as Record<string, unknown>;
  if (!isSigningSecret(current) || (previous !== undefined && !isSigningSecret(previous))) return undefined;
  return previous === undefined ? { current } : { current, previous };
}
