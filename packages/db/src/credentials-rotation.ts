import type { DatabasePool } from './pool';
import {
  CredentialsCipherError,
  type CredentialsCipher,
  type CredentialsCipherFailure,
  type EncryptedCredentials,
  type EncryptedSecret,
} from './credentials-cipher';
import { db, run, sql } from './sql';

/** What a re-encryption run did, counted in ciphertexts: a target has up to two (credentials, signing secrets). */
export interface ReencryptionResult {
  /** Ciphertexts that now sit under the current key. */
  reencrypted: number;
  /** Ciphertexts that could not be read (key not configured, tampered); left as they were. */
  unreadable: Array<{ targetId: string; secret: EncryptedSecret; keyId: string | null; reason: CredentialsCipherFailure }>;
  /** Ciphertexts changed by someone else during the run (an admin PUT or a rotation already wrote them anew). */
  changedMeanwhile: number;
}

/** Each encrypted column of notification_targets, with the column naming its key. */
const ENCRYPTED_COLUMNS = {
  credentials: { text: 'credentials', keyId: 'credentials_key_id' },
  'signing secrets': { text: 'signing_secrets', keyId: 'signing_key_id' },
} as const satisfies Record<EncryptedSecret, { text: string; keyId: string }>;

/** Every statement of the re-encryption, built from its parameters (the SQL snapshot compiles each). */
export const credentialsRotationQueries = {
  /** The next batch of targets with a ciphertext of `secret` under another key (or none recorded), by id. */
  underOtherKey: (secret: EncryptedSecret, currentKeyId: string, afterId: string | undefined, limit: number) => {
    const { text, keyId } = ENCRYPTED_COLUMNS[secret];
    return db
      .selectFrom('notification_targets')
      .select(['id', sql<string>`${sql.ref(text)}`.as('ciphertext'), sql<string | null>`${sql.ref(keyId)}`.as('key_id')])
      .where(sql.ref(text), 'is not', null)
      .where(sql.ref(keyId), 'is distinct from', currentKeyId)
      .$if(afterId !== undefined, (q) => q.where('id', '>', afterId!))
      .orderBy('id')
      .limit(limit);
  },
  /** Rewrites a row's ciphertext of `secret` only if it still holds the one that was read. */
  replace: (secret: EncryptedSecret, id: string, read: string, written: { ciphertext: string; keyId: string }) => {
    const { text, keyId } = ENCRYPTED_COLUMNS[secret];
    return db
      .updateTable('notification_targets')
      .set({ [text]: written.ciphertext, [keyId]: written.keyId, updated_at: sql<Date>`now()` })
      .where('id', '=', id)
      .where(sql.ref(text), '=', read);
  },
};

/**
 * Step 2 of a key rotation (see credentials-cipher.ts): rewrites the credentials and the signing
 * secrets of every notification target written under a key other than the cipher's current one,
 * `batchSize` rows at a time, reporting progress after each batch. A row is rewritten only if it
 * still holds the ciphertext that was read, so an admin's concurrent change is never overwritten;
 * no lock is held across batches, so the services keep running. Safe to run again: rows already
 * done are skipped.
 */
export async function reencryptCredentials(
  pool: DatabasePool,
  cipher: CredentialsCipher,
  options: { batchSize?: number; onProgress?: (progress: ReencryptionResult) => void } = {},
): Promise<ReencryptionResult> {
  const batchSize = options.batchSize ?? 100;
  const result: ReencryptionResult = { reencrypted: 0, unreadable: [], changedMeanwhile: 0 };
  const reencrypt: Record<EncryptedSecret, (ciphertext: string, targetId: string) => { ciphertext: string; keyId: string }> = {
    credentials: (ciphertext, targetId) => cipher.encrypt(cipher.decrypt(ciphertext, targetId), targetId),
    'signing secrets': (ciphertext, targetId) => cipher.encryptSigningSecrets(cipher.decryptSigningSecrets(ciphertext, targetId), targetId),
  };
  for (const secret of ['credentials', 'signing secrets'] as const) {
    let afterId: string | undefined;
    for (;;) {
      const { rows } = await run(pool, credentialsRotationQueries.underOtherKey(secret, cipher.currentKeyId, afterId, batchSize));
      if (rows.length === 0) break;
      for (const row of rows) {
        let encrypted: EncryptedCredentials;
        try {
          encrypted = reencrypt[secret](row.ciphertext, row.id);
        } catch (error) {
          if (!(error instanceof CredentialsCipherError)) throw error;
          result.unreadable.push({ targetId: row.id, secret, keyId: row.key_id, reason: error.reason });
          continue;
        }
        const { rowCount } = await run(pool, credentialsRotationQueries.replace(secret, row.id, row.ciphertext, encrypted));
        if (rowCount === 1) result.reencrypted += 1;
        else result.changedMeanwhile += 1;
      }
      afterId = rows.at(-1)!.id;
      options.onProgress?.(result);
    }
  }
  return result;
}
