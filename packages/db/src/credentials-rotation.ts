import { sqlPool, type PrismaClient } from './client';
import { CredentialsCipherError, type CredentialsCipher, type CredentialsCipherFailure } from './credentials-cipher';
import { db, run, sql } from './sql';

/** What a re-encryption run did. */
export interface ReencryptionResult {
  /** Targets whose credentials now sit under the current key. */
  reencrypted: number;
  /** Targets whose credentials could not be read (key not configured, tampered); left as they were. */
  unreadable: Array<{ targetId: string; keyId: string | null; reason: CredentialsCipherFailure }>;
  /** Targets changed by someone else during the run (an admin PUT already wrote them anew). */
  changedMeanwhile: number;
}

/** Every statement of the re-encryption, built from its parameters (the SQL snapshot compiles each). */
export const credentialsRotationQueries = {
  /** The next batch of targets with credentials under another key (or none recorded), by id. */
  underOtherKey: (currentKeyId: string, afterId: string | undefined, limit: number) =>
    db
      .selectFrom('notification_targets')
      .select(['id', 'credentials', 'credentials_key_id'])
      .where('credentials', 'is not', null)
      .where('credentials_key_id', 'is distinct from', currentKeyId)
      .$if(afterId !== undefined, (q) => q.where('id', '>', afterId!))
      .orderBy('id')
      .limit(limit),
  /** Rewrites a row's credentials only if it still holds the ciphertext that was read. */
  replace: (id: string, read: string, written: { ciphertext: string; keyId: string }) =>
    db
      .updateTable('notification_targets')
      .set({ credentials: written.ciphertext, credentials_key_id: written.keyId, updated_at: sql<Date>`now()` })
      .where('id', '=', id)
      .where('credentials', '=', read),
};

/**
 * Step 2 of a key rotation (see credentials-cipher.ts): rewrites the credentials of every
 * notification target written under a key other than the cipher's current one, `batchSize` rows
 * at a time, reporting progress after each batch. A row is rewritten only if it still holds the
 * ciphertext that was read, so an admin's concurrent change is never overwritten; no lock is held
 * across batches, so the services keep running. Safe to run again: rows already done are skipped.
 */
export async function reencryptCredentials(
  prisma: PrismaClient,
  cipher: CredentialsCipher,
  options: { batchSize?: number; onProgress?: (progress: ReencryptionResult) => void } = {},
): Promise<ReencryptionResult> {
  const batchSize = options.batchSize ?? 100;
  const result: ReencryptionResult = { reencrypted: 0, unreadable: [], changedMeanwhile: 0 };
  let afterId: string | undefined;
  const pool = sqlPool(prisma);
  for (;;) {
    const { rows } = await run(pool, credentialsRotationQueries.underOtherKey(cipher.currentKeyId, afterId, batchSize));
    if (rows.length === 0) return result;
    for (const row of rows) {
      const stored = row.credentials!;
      let encrypted;
      try {
        encrypted = cipher.encrypt(cipher.decrypt(stored, row.id), row.id);
      } catch (error) {
        if (!(error instanceof CredentialsCipherError)) throw error;
        result.unreadable.push({ targetId: row.id, keyId: row.credentials_key_id, reason: error.reason });
        continue;
      }
      const { rowCount } = await run(pool, credentialsRotationQueries.replace(row.id, stored, encrypted));
      if (rowCount === 1) result.reencrypted += 1;
      else result.changedMeanwhile += 1;
    }
    afterId = rows.at(-1)!.id;
    options.onProgress?.(result);
  }
}
