import { newSigningSecret, previousSecretExpiry } from '@herald/domain';
import { CredentialsCipherError, type CredentialsCipher } from '../credentials-cipher';
import { run, type Sql } from '../sql';
import type { TargetRow } from './target-rows';
import { targetQueries } from './target-statements';
import type { SigningSecretRecord, TargetSigning } from './target-types';

/**
 * A target's signing secrets, decrypted; for a target created before signatures (none stored),
 * new ones generated and stored first, unless a concurrent first use stored its own, which are
 * then used. Throws CredentialsCipherError when they cannot be decrypted.
 */
export async function storedSigning(
  pool: Sql,
  cipher: CredentialsCipher,
  targetId: string,
  stored: Pick<TargetRow, 'signing_secrets' | 'signing_grace_ends_at'>,
): Promise<TargetSigning> {
  let row = stored;
  if (row.signing_secrets === null) {
    const encrypted = cipher.encryptSigningSecrets({ current: newSigningSecret() }, targetId);
    [row = stored] = (await run(pool, targetQueries.fillSigning(targetId, encrypted))).rows;
    if (row.signing_secrets === null) [row = stored] = (await run(pool, targetQueries.readSigning(targetId))).rows;
  }
  // Still none: the row is gone (targets are never deleted, so this cannot happen).
  if (row.signing_secrets === null) throw new Error(`notification target ${targetId} has no signing secrets`);
  return { secrets: cipher.decryptSigningSecrets(row.signing_secrets, targetId), graceEndsAt: row.signing_grace_ends_at };
}

/** The current secret of stored signing secrets; undefined when no key reads them (a rotation is then the remedy, with no grace). */
export function readableCurrent(cipher: CredentialsCipher, ciphertext: string, targetId: string): string | undefined {
  try {
    return cipher.decryptSigningSecrets(ciphertext, targetId).current;
  } catch (error) {
    if (error instanceof CredentialsCipherError) return undefined;
    throw error;
  }
}

export function signingSecretRecord(targetId: string, signing: TargetSigning, now: Date): SigningSecretRecord {
  const { secrets, graceEndsAt } = signing;
  return { targetId, secret: secrets.current, previousSecretExpiresAt: previousSecretExpiry(secrets, graceEndsAt, now) };
}
