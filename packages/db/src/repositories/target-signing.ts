import { newSigningSecret, previousSecretExpiry } from '@herald/domain';
import { CredentialsCipherError, type CredentialsCipher } from '../credentials-cipher';
import { run, type Sql } from '../sql';
import type { TargetRow } from './target-rows';
import { targetQueries } from './target-statements';
import type { SigningSecretRecord, TargetSigning } from './target-types';

/**
 * A target's signing secrets, decrypted; for a target created before signatures (none stored),
 * new ones generated and stored first, unless a concurrent first use stored its own, which are
 * then used. Throws CredentialsCipherError when they cannot be decrypted. For the admin API's own
 * first use only: the worker's load never writes (signingOfLoaded).
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
  return signingOfLoaded(cipher, targetId, row);
}

/**
 * A loaded target's signing secrets, decrypted, with no statement: a target stored before
 * signatures got its secrets from fillMissingSigningSecrets, which the delivery-worker runs before
 * it takes a job, so a row without them is a broken invariant, thrown (the job is tried again)
 * rather than a callback sent unsigned. Throws CredentialsCipherError when they cannot be decrypted.
 */
export function signingOfLoaded(cipher: CredentialsCipher, targetId: string, row: Pick<TargetRow, 'signing_secrets' | 'signing_grace_ends_at'>): TargetSigning {
  if (row.signing_secrets === null) {
    throw new Error(`notification target ${targetId} has no signing secrets (fillMissingSigningSecrets gives them at the delivery-worker's start)`);
  }
  return { secrets: cipher.decryptSigningSecrets(row.signing_secrets, targetId), graceEndsAt: row.signing_grace_ends_at };
}

/**
 * Gives every target stored before signatures (none stored) its first signing secrets, `batchSize`
 * rows at a time, and returns how many it gave. A target that got its own meanwhile (a concurrent
 * fill, or the admin API's first use) keeps them. Safe to run again and from several processes at
 * once: the delivery-worker runs it before it takes a job, so that its load only reads.
 */
export async function fillMissingSigningSecrets(pool: Sql, cipher: CredentialsCipher, batchSize = 100): Promise<number> {
  let filled = 0;
  let afterId: string | undefined;
  for (;;) {
    const { rows } = await run(pool, targetQueries.withoutSigning(afterId, batchSize));
    if (rows.length === 0) return filled;
    for (const { id } of rows) {
      const encrypted = cipher.encryptSigningSecrets({ current: newSigningSecret() }, id);
      filled += (await run(pool, targetQueries.fillSigning(id, encrypted))).rowCount ?? 0;
      afterId = id;
    }
  }
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
