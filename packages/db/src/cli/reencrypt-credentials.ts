// `pnpm db:reencrypt-credentials`: step 2 of a SECRETS_KEY rotation (see credentials-cipher.ts).
// Rewrites every notification target's credentials and signing secrets under the current key;
// prints progress and, at the end, the targets it could not read (never any secret).
import { loadKeyRotationConfig } from '@herald/config';
import { closeDatabasePool, createDatabasePool } from '../pool';
import { credentialsCipherFromConfig } from '../credentials-cipher';
import { reencryptCredentials } from '../credentials-rotation';

async function main(): Promise<number> {
  const config = loadKeyRotationConfig();
  const pool = createDatabasePool(config.databaseUrl);
  try {
    const result = await reencryptCredentials(pool, credentialsCipherFromConfig(config), {
      onProgress: (progress) => console.log(`re-encrypted ${progress.reencrypted} secret(s) so far, ${progress.unreadable.length} unreadable`),
    });
    console.log(
      `${result.reencrypted} secret(s) (credentials, signing secrets) re-encrypted under key ${config.secretsKeyId}; ${result.changedMeanwhile} changed by an admin meanwhile (already current)`,
    );
    for (const { targetId, secret, keyId, reason } of result.unreadable) {
      const remedy = secret === 'credentials' ? "set the target's credentials again" : "rotate the target's signing secret";
      console.error(
        `target ${targetId}: ${secret} under key ${keyId ?? '(none)'} cannot be read (${reason.replaceAll('_', ' ')}); add that key to SECRETS_PREVIOUS_KEYS or ${remedy}`,
      );
    }
    return result.unreadable.length === 0 ? 0 : 1;
  } finally {
    await closeDatabasePool(pool);
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`db:reencrypt-credentials failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
