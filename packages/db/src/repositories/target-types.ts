import type { DeliveryPolicy, EventType, OAuthTokenRequest, ObjectType, SigningSecrets, TargetOrdering } from '@herald/domain';

/** Who a notification target belongs to: a whole program, or one merchant. */
export type TargetOwner = { kind: 'program'; programId: string } | { kind: 'merchant'; merchantId: string };

/** How callbacks authenticate, with the secrets: what an admin sets and what the worker sends. */
export type TargetAuth = { mode: 'none' } | { mode: 'basic'; username: string; password: string } | OAuthTargetAuth;

/** OAuth client credentials: where and how the token is requested. */
export interface OAuthTargetAuth {
  mode: 'oauth';
  authUrl: string;
  username: string;
  password: string;
  /** The spec's token request or RFC 6749's form request. Default `spec`; always set when read back. */
  tokenRequest?: OAuthTokenRequest;
  /** The scope asked for; absent asks for none. */
  scope?: string;
}

/** What every view shows instead of a password. */
export const MASKED_PASSWORD = '********';

/** TargetAuth as views show it: the user name (not a secret) and a fixed mask for the password. */
export type MaskedTargetAuth =
  | { mode: 'none' }
  | { mode: 'basic'; username: string; password: typeof MASKED_PASSWORD }
  | (Omit<OAuthTargetAuth, 'password' | 'tokenRequest'> & { tokenRequest: OAuthTokenRequest; password: typeof MASKED_PASSWORD });

/** Which notifications a target receives; an absent list means all. */
export interface TargetNotifications {
  objectTypes?: ObjectType[];
  eventTypes?: EventType[];
}

/** Everything an admin sets on a target (a PUT replaces all of it). */
export interface TargetInput {
  url: string;
  auth: TargetAuth;
  notifications: TargetNotifications;
  enabled: boolean;
  /** In what order its callbacks go (TARGET_ORDERINGS). Default `none`. */
  ordering?: TargetOrdering;
  /** The target's own delivery policy: the fields set; the others (all, when absent) follow the global defaults. */
  delivery?: DeliveryPolicy;
}

/** How callbacks to a target have been going, as the delivery-worker records it with each batch of attempts. */
interface TargetDeliveryHealth {
  /** When a callback to the target last got its 200; null when none ever did. */
  lastSuccessAt: Date | null;
  /** Since when every attempt has failed (no 200 since); null when the last attempt succeeded or none failed. */
  failingSince: Date | null;
}

/** A notification target as admins see it: never a password. */
export interface NotificationTargetRecord {
  id: string;
  programId: string;
  /** Set for a merchant-level target, null for a program-level one. */
  merchantId: string | null;
  url: string;
  auth: MaskedTargetAuth;
  notifications: TargetNotifications;
  enabled: boolean;
  ordering: TargetOrdering;
  /** Why the target is switched off: `auto-disabled`, or null (on, or switched off by an admin). */
  disabledReason: string | null;
  /** When the target was switched off; null while it is on. */
  disabledAt: Date | null;
  /** The delivery policy the admin set (fields absent follow the global defaults). */
  delivery: DeliveryPolicy;
  health: TargetDeliveryHealth;
  createdAt: Date;
  updatedAt: Date;
}

/** One page of targets, with how many match in all. */
export interface TargetPage {
  count: number;
  targets: NotificationTargetRecord[];
}

/** Which targets a list shows: those of one program (its own and its merchants'), or of one merchant. */
export interface TargetListFilter {
  programId?: string;
  merchantId?: string;
}

/**
 * A target with its decrypted credentials, for the delivery worker only: never log it, queue it
 * or return it from an API. Deleted targets are returned too (deletedAt set, enabled false), so
 * that the worker can tell "switched off" from "never existed".
 */
export interface DeliveryTarget {
  id: string;
  programId: string;
  merchantId: string | null;
  url: string;
  auth: TargetAuth;
  notifications: TargetNotifications;
  enabled: boolean;
  /** `object`: each object's callbacks wait for the previous one's final outcome. */
  ordering: TargetOrdering;
  /** Why the target is switched off (`auto-disabled`), or null. */
  disabledReason: string | null;
  /** Start of the current run of failed attempts; null when the last attempt succeeded. */
  failingSince: Date | null;
  /** When an attempt last succeeded (to within LAST_SUCCESS_PRECISION_MS); null if none has. */
  lastSuccessAt: Date | null;
  deletedAt: Date | null;
  /** Its own delivery policy, read at each attempt (the worker resolves it over its defaults). */
  delivery: DeliveryPolicy;
  /** The secrets that sign its callbacks (see signingSecretsInUse in @herald/domain). */
  signing: TargetSigning;
}

/** A target's Standard Webhooks signing secrets, decrypted: never log them, queue them or show them but through the signing-secret endpoint. */
export interface TargetSigning {
  secrets: SigningSecrets;
  /** Until when the previous secret signs too; null when there is no previous secret. */
  graceEndsAt: Date | null;
}

/** What the signing-secret endpoints show: the secret merchants verify callbacks with. */
export interface SigningSecretRecord {
  targetId: string;
  /** `whsec_…`: signs every callback. */
  secret: string;
  /** While a rotation's grace period lasts, callbacks also carry the previous secret's signature until then; otherwise null. */
  previousSecretExpiresAt: Date | null;
}
