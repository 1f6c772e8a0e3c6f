import type { PrismaClient } from './client';
import { CredentialsCipherError, type CredentialsCipher, type CredentialsCipherFailure } from './credentials-cipher';

/** What a re-encryption run did. */
export interface ReencryptionResult {
  /** Targets whose credentials now sit under the current key. */
  reencrypted: number;
  /** Targets whose credentials could not be read (key not configured, tampered); left as they were. */
  unreadable: Array<{ targetId: string; keyId: string | null; reason: CredentialsCipherFailure }>;
  /** Targets changed by someone else during the run (an admin PUT already wrote them anew). */
  changedMeanwhile: number;
}

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
  for (;;) {
    const rows = await prisma.notificationTarget.findMany({
      where: { credentials: { not: null }, credentialsKeyId: { not: cipher.currentKeyId }, ...(afterId ? { id: { gt: afterId } } : {}) },
      orderBy: { id: 'asc' },
      take: batchSize,
      select: { id: true, credentials: true, credentialsKeyId: true },
    });
    if (rows.length === 0) return result;
    for (const row of rows) {
      let encrypted;
      try {
        encrypted = cipher.encrypt(cipher.decrypt(row.credentials!, row.id), row.id);
      } catch (error) {
        if (!(error instanceof CredentialsCipherError)) throw error;
        result.unreadable.push({ targetId: row.id, keyId: row.credentialsKeyId, reason: error.reason });
        continue;
      }
      const { count } = await prisma.notificationTarget.updateMany({
        where: { id: row.id, credentials: row.credentials },
        data: { credentials: encrypted.ciphertext, credentialsKeyId: encrypted.keyId },
      });
      if (count === 1) result.reencrypted += 1;
      else result.changedMeanwhile += 1;
    }
    afterId = rows.at(-1)!.id;
    options.onProgress?.(result);
  }
}
