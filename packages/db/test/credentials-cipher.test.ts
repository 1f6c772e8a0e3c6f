import { randomBytes, randomUUID } from 'node:crypto';
import { newSigningSecret } from '@herald/domain';
import { createCredentialsCipher, CredentialsCipherError, credentialsCipherFromConfig } from '../src/credentials-cipher';

const credentials = { username: 'shop-user', password: 'correct horse battery staple' };
const keyOne = randomBytes(32);
const keyTwo = randomBytes(32);
const cipher = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: keyOne } });

function failureOf(run: () => unknown): CredentialsCipherError {
  try {
    run();
  } catch (error) {
    if (error instanceof CredentialsCipherError) return error;
    throw error;
  }
  throw new Error('expected a CredentialsCipherError');
}

/** The ciphertext with one of its five dot-separated parts changed. */
function withPart(ciphertext: string, index: number, change: (part: string) => string): string {
  const parts = ciphertext.split('.');
  parts[index] = change(parts[index]!);
  return parts.join('.');
}

// Flips the first bit of a base64url part and writes it back in canonical form.
function flipFirstBit(part: string): string {
  const bytes = Buffer.from(part, 'base64url');
  bytes[0] = bytes[0]! ^ 0x01;
  return bytes.toString('base64url');
}

describe('the credentials cipher', () => {
  it('decrypts what it encrypted for the same target', () => {
    const targetId = randomUUID();
    const { ciphertext, keyId } = cipher.encrypt(credentials, targetId);
    expect(keyId).toBe('k1');
    expect(cipher.decrypt(ciphertext, targetId)).toEqual(credentials);
  });

  it('writes a self-describing ciphertext that never contains the plaintext', () => {
    const { ciphertext } = cipher.encrypt(credentials, randomUUID());
    expect(ciphertext).toMatch(/^v1\.k1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/);
    expect(ciphertext).not.toContain(credentials.password);
    expect(ciphertext).not.toContain(Buffer.from(credentials.password).toString('base64url'));
  });

  it('uses a fresh IV for every encryption', () => {
    const targetId = randomUUID();
    const first = cipher.encrypt(credentials, targetId).ciphertext;
    const second = cipher.encrypt(credentials, targetId).ciphertext;
    expect(first).not.toBe(second);
    expect(first.split('.')[2]).not.toBe(second.split('.')[2]);
  });

  it('round-trips passwords with colons, quotes and non-ASCII characters', () => {
    const targetId = randomUUID();
    const odd = { username: 'ünïcødé', password: 'a:b"c\\d\n€😀' };
    expect(cipher.decrypt(cipher.encrypt(odd, targetId).ciphertext, targetId)).toEqual(odd);
  });

  it.each([
    ['the IV', 2],
    ['the tag', 3],
    ['the ciphertext', 4],
  ])('detects a change to %s', (_name, index) => {
    const targetId = randomUUID();
    const tampered = withPart(cipher.encrypt(credentials, targetId).ciphertext, index, flipFirstBit);
    expect(failureOf(() => cipher.decrypt(tampered, targetId)).reason).toBe('authentication_failed');
  });

  it('refuses a ciphertext copied onto another target (the AAD binds it to its target id)', () => {
    const { ciphertext } = cipher.encrypt(credentials, randomUUID());
    const error = failureOf(() => cipher.decrypt(ciphertext, randomUUID()));
    expect(error.reason).toBe('authentication_failed');
  });

  it('refuses a ciphertext naming a key id that is not in the keyring', () => {
    const other = createCredentialsCipher({ currentKeyId: 'k2', keyring: { k2: keyTwo } });
    const targetId = randomUUID();
    const error = failureOf(() => cipher.decrypt(other.encrypt(credentials, targetId).ciphertext, targetId));
    expect(error).toMatchObject({ reason: 'unknown_key', keyId: 'k2', code: 'credentials_unreadable' });
  });

  it('refuses a ciphertext relabelled with another key id, and one decrypted with other key material', () => {
    const targetId = randomUUID();
    const both = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: keyOne, k2: keyTwo } });
    const relabelled = withPart(cipher.encrypt(credentials, targetId).ciphertext, 1, () => 'k2');
    expect(failureOf(() => both.decrypt(relabelled, targetId)).reason).toBe('authentication_failed');

    const sameIdOtherKey = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: keyTwo } });
    expect(failureOf(() => sameIdOtherKey.decrypt(cipher.encrypt(credentials, targetId).ciphertext, targetId)).reason).toBe('authentication_failed');
  });

  it('reads ciphertexts of a previous key after a rotation, and writes with the new one', () => {
    const targetId = randomUUID();
    const old = cipher.encrypt(credentials, targetId).ciphertext;
    const rotated = createCredentialsCipher({ currentKeyId: 'k2', keyring: { k1: keyOne, k2: keyTwo } });
    expect(rotated.decrypt(old, targetId)).toEqual(credentials);
    expect(rotated.encrypt(credentials, targetId).keyId).toBe('k2');
  });

  it.each(['', 'not a ciphertext', 'v2.k1.a.b.c', 'v1.k1.AAAA.AAAA.AAAA', 'v1.k1.!!!.@@@.###', 'v1.k1.a.b.c.d'])('reports %p as malformed', (ciphertext) => {
    expect(failureOf(() => cipher.decrypt(ciphertext, randomUUID())).reason).toBe('malformed');
  });

  it('never puts the plaintext in an error message', () => {
    const targetId = randomUUID();
    const { ciphertext } = cipher.encrypt(credentials, targetId);
    const errors = [
      failureOf(() => cipher.decrypt(ciphertext, randomUUID())),
      failureOf(() => cipher.decrypt(withPart(ciphertext, 4, flipFirstBit), targetId)),
    ];
    for (const error of errors) {
      expect(`${error.message} ${error.stack}`).not.toContain(credentials.password);
      expect(error.message).toContain(error.targetId);
    }
  });

  it('refuses a keyring without the current key, a key of the wrong size and a bad key id at once', () => {
    expect(() => createCredentialsCipher({ currentKeyId: 'k9', keyring: { k1: keyOne } })).toThrow(/"k9" is not in the keyring/);
    expect(() => createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: randomBytes(16) } })).toThrow(/must be 32 bytes/);
    expect(() => createCredentialsCipher({ currentKeyId: 'k.1', keyring: { 'k.1': keyOne } })).toThrow(/Key id "k.1"/);
  });

  it('is built from the configured key and key id', () => {
    const fromConfig = credentialsCipherFromConfig({ secretsKey: keyOne, secretsKeyId: 'prod-2026', secretsPreviousKeys: {} });
    const targetId = randomUUID();
    const { ciphertext, keyId } = fromConfig.encrypt(credentials, targetId);
    expect(keyId).toBe('prod-2026');
    expect(ciphertext.startsWith('v1.prod-2026.')).toBe(true);
    expect(createCredentialsCipher({ currentKeyId: 'prod-2026', keyring: { 'prod-2026': keyOne } }).decrypt(ciphertext, targetId)).toEqual(credentials);
  });

  it('reads what a previous key wrote, and writes with the current key only', () => {
    const targetId = randomUUID();
    const old = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: keyOne } }).encrypt(credentials, targetId);
    const rotated = credentialsCipherFromConfig({ secretsKey: randomBytes(32), secretsKeyId: 'k2', secretsPreviousKeys: { k1: keyOne } });
    expect(rotated.decrypt(old.ciphertext, targetId)).toEqual(credentials);
    expect(rotated.encrypt(credentials, targetId).keyId).toBe('k2');
  });
});

describe('the cipher of signing secrets', () => {
  it('decrypts the current and previous secrets it encrypted for the same target, and never shows them in the ciphertext', () => {
    const targetId = randomUUID();
    const secrets = { current: newSigningSecret(), previous: newSigningSecret() };
    const { ciphertext, keyId } = cipher.encryptSigningSecrets(secrets, targetId);
    expect(keyId).toBe('k1');
    expect(ciphertext).not.toContain(secrets.current.slice(6));
    expect(cipher.decryptSigningSecrets(ciphertext, targetId)).toEqual(secrets);
    const alone = { current: newSigningSecret() };
    expect(cipher.decryptSigningSecrets(cipher.encryptSigningSecrets(alone, targetId).ciphertext, targetId)).toEqual(alone);
  });

  it('refuses signing secrets read as credentials and credentials read as signing secrets (the AAD names which)', () => {
    const targetId = randomUUID();
    const signing = cipher.encryptSigningSecrets({ current: newSigningSecret() }, targetId).ciphertext;
    const stored = cipher.encrypt(credentials, targetId).ciphertext;
    expect(failureOf(() => cipher.decrypt(signing, targetId)).reason).toBe('authentication_failed');
    const error = failureOf(() => cipher.decryptSigningSecrets(stored, targetId));
    expect(error.reason).toBe('authentication_failed');
    expect(error.message).toBe(`Signing secrets of notification target ${targetId} cannot be decrypted: authentication failed (key k1).`);
  });

  it('refuses signing secrets copied onto another target', () => {
    const { ciphertext } = cipher.encryptSigningSecrets({ current: newSigningSecret() }, randomUUID());
    expect(failureOf(() => cipher.decryptSigningSecrets(ciphertext, randomUUID())).reason).toBe('authentication_failed');
  });
});
