import {
  storedDeliveryPolicy,
  type CallbackAuthMode,
  type DeliveryPolicy,
  type EventType,
  type OAuthTokenRequest,
  type ObjectType,
  type TargetOrdering,
} from '@herald/domain';
import type { Selectable } from 'kysely';
import type { CredentialsCipher } from '../credentials-cipher';
import type { NotificationTarget } from '../generated/kysely/schema';
import { MASKED_PASSWORD, type DeliveryTarget, type MaskedTargetAuth, type TargetAuth, type TargetNotifications, type TargetSigning } from './target-types';

// A notification_targets row read into the repository's types: its auth decrypted, masked for
// views, its notification lists, the worker's DeliveryTarget.

/** A notification_targets row, as the schema types it. */
export type TargetRow = Selectable<NotificationTarget>;

/** A row's auth settings with the credentials decrypted; throws CredentialsCipherError when they cannot be. */
export function decryptAuth(
  row: Pick<TargetRow, 'id' | 'auth_mode' | 'auth_url' | 'token_request' | 'oauth_scope' | 'credentials'>,
  cipher: CredentialsCipher,
): TargetAuth {
  const mode = row.auth_mode as CallbackAuthMode;
  if (mode === 'none') return { mode };
  const { username, password } = cipher.decrypt(row.credentials ?? '', row.id);
  if (mode === 'basic') return { mode, username, password };
  return {
    mode,
    authUrl: row.auth_url ?? '',
    username,
    password,
    // Rows written before the column existed were sent the spec's request.
    tokenRequest: (row.token_request ?? 'spec') as OAuthTokenRequest,
    ...(row.oauth_scope === null ? {} : { scope: row.oauth_scope }),
  };
}

/** The worker's view of a target row: credentials decrypted (throws CredentialsCipherError when they cannot be). */
export function deliveryTargetOf(
  row: Pick<
    TargetRow,
    | 'id'
    | 'program_id'
    | 'merchant_id'
    | 'url'
    | 'auth_mode'
    | 'auth_url'
    | 'token_request'
    | 'oauth_scope'
    | 'credentials'
    | 'object_types'
    | 'event_types'
    | 'enabled'
    | 'ordering'
    | 'disabled_reason'
    | 'failing_since'
    | 'last_success_at'
    | 'deleted_at'
    | 'delivery_policy'
  >,
  cipher: CredentialsCipher,
  signing: TargetSigning,
): DeliveryTarget {
  return {
    id: row.id,
    programId: row.program_id,
    merchantId: row.merchant_id,
    url: row.url,
    auth: decryptAuth(row, cipher),
    notifications: notifications(row),
    enabled: row.enabled,
    ordering: row.ordering as TargetOrdering,
    disabledReason: row.disabled_reason,
    failingSince: row.failing_since,
    lastSuccessAt: row.last_success_at,
    deletedAt: row.deleted_at,
    delivery: storedDeliveryPolicy(row.delivery_policy),
    signing,
  };
}

/** A policy as its column stores it: the fields set, or null when none is (every field follows its default). */
export function deliveryPolicyColumn(policy: DeliveryPolicy): string | null {
  return Object.keys(policy).length === 0 ? null : JSON.stringify(policy);
}

export function masked(auth: TargetAuth): MaskedTargetAuth {
  if (auth.mode === 'oauth') return { ...auth, tokenRequest: auth.tokenRequest ?? 'spec', password: MASKED_PASSWORD };
  return auth.mode === 'none' ? auth : { ...auth, password: MASKED_PASSWORD };
}

export function notifications(row: Pick<TargetRow, 'object_types' | 'event_types'>): TargetNotifications {
  return {
    ...(row.object_types.length > 0 ? { objectTypes: row.object_types as ObjectType[] } : {}),
    ...(row.event_types.length > 0 ? { eventTypes: row.event_types as EventType[] } : {}),
  };
}
