import { CredentialsCipherError, type CredentialsCipher } from '../credentials-cipher';
import type { RowOf } from '../sql';
import type { loadStatement } from './delivery-attempt-statements';
import { deliveryTargetOf } from './target-rows';
import { signingOfLoaded } from './target-signing';
import type { DeliveryTarget } from './target-types';

/**
 * A delivery's target as loaded for an attempt: `ready`, its credentials and signing secrets
 * decrypted; `unreadable` when no key of SECRETS decrypts them (data, not an error: one unreadable
 * target fails only its own deliveries, and `message` says which key is missing); `missing` when
 * the row is gone.
 */
export type LoadedTarget =
  | { readonly state: 'ready'; readonly target: DeliveryTarget }
  | { readonly state: 'unreadable'; readonly message: string }
  | { readonly state: 'missing' };

const MISSING_TARGET: LoadedTarget = Object.freeze({ state: 'missing' });

/** A row of the load statement: a delivery with its target's columns (null when it is gone) and its event. */
type WorkRow = RowOf<ReturnType<typeof loadStatement>>;

/**
 * The target of a delivery's row, as an attempt gets it (see LoadedTarget). Reads only: a
 * load path that wrote would lock target rows under the worker's batches.
 */
export function loadedTarget(cipher: CredentialsCipher, row: WorkRow): LoadedTarget {
  // Left-joined: the target's columns are null together, when the row is gone.
  if (row.target_id === null) return MISSING_TARGET;
  try {
    const signing = signingOfLoaded(cipher, row.target_id, {
      signing_secrets: row.target_signing_secrets,
      signing_grace_ends_at: row.target_signing_grace_ends_at,
    });
    const target = deliveryTargetOf(
      {
        id: row.target_id,
        program_id: row.target_program_id!,
        merchant_id: row.target_merchant_id,
        url: row.target_url!,
        auth_mode: row.target_auth_mode!,
        auth_url: row.target_auth_url,
        token_request: row.target_token_request,
        oauth_scope: row.target_oauth_scope,
        credentials: row.target_credentials,
        object_types: row.target_object_types!,
        event_types: row.target_event_types!,
        enabled: row.target_enabled!,
        ordering: row.target_ordering!,
        disabled_reason: row.target_disabled_reason,
        failing_since: row.target_failing_since,
        last_success_at: row.target_last_success_at,
        deleted_at: row.target_deleted_at,
        delivery_policy: row.target_delivery_policy,
      },
      cipher,
      signing,
    );
    return { state: 'ready', target };
  } catch (error) {
    if (error instanceof CredentialsCipherError) return { state: 'unreadable', message: error.message };
    throw error;
  }
}

/** Most decrypted ciphertexts the worker keeps; past it, the memo starts again empty. */
const DECRYPTED_MAX = 1_000;

/**
 * `cipher`, remembering what it decrypted: a busy worker loads the same few targets batch after
 * batch, and opening their ciphertexts was about 2 % of its CPU. A ciphertext is never rewritten
 * in place (a new secret, a rotation or a re-encryption stores a new one, with a fresh IV), so a
 * remembered value is never stale. The secrets stay in the worker's memory between batches, as
 * they already did while a batch ran; a failure is not remembered, and throws at every load.
 */
export function rememberingDecryptions(cipher: CredentialsCipher): CredentialsCipher {
  const remember = <T>(decrypt: (ciphertext: string, targetId: string) => T) => {
    const decrypted = new Map<string, T>();
    return (ciphertext: string, targetId: string): T => {
      const key = `${targetId} ${ciphertext}`;
      let value = decrypted.get(key);
      if (value === undefined) {
        value = decrypt(ciphertext, targetId);
        if (decrypted.size >= DECRYPTED_MAX) decrypted.clear();
        decrypted.set(key, value);
      }
      return value;
    };
  };
  return {
    currentKeyId: cipher.currentKeyId,
    encrypt: (credentials, targetId) => cipher.encrypt(credentials, targetId),
    encryptSigningSecrets: (secrets, targetId) => cipher.encryptSigningSecrets(secrets, targetId),
    decrypt: remember((ciphertext, targetId) => cipher.decrypt(ciphertext, targetId)),
    decryptSigningSecrets: remember((ciphertext, targetId) => cipher.decryptSigningSecrets(ciphertext, targetId)),
  };
}
