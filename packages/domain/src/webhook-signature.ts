import { createHmac, randomBytes } from 'node:crypto';

// Standard Webhooks signatures (https://www.standardwebhooks.com), the one place Herald signs a
// callback: the delivery worker's callbacks and the admin's test callbacks both sign here.
//
// A secret is `whsec_` followed by the Base64 of its bytes. A signature is
// `v1,` + Base64(HMAC-SHA256(secret bytes, `${webhook-id}.${webhook-timestamp}.${body}`)), and the
// `webhook-signature` header holds one or more of them separated by spaces: during a rotation's
// grace period a receiver holding either secret can verify the callback.

/** Every signing secret starts with this (the specification's prefix for symmetric secrets). */
const SIGNING_SECRET_PREFIX = 'whsec_';
/** 32 random bytes: the key length of HMAC-SHA256, within the specification's 24 to 64. */
const SECRET_BYTES = 32;
const SIGNING_SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

/** A target's signing secrets, as stored (encrypted). */
export interface SigningSecrets {
  /** Signs every callback. */
  readonly current: string;
  /** The secret the last rotation replaced; it signs too until the rotation's grace period ends. */
  readonly previous?: string;
}

/** What the signature covers: the values of the webhook-id and webhook-timestamp headers, and the exact body sent. */
export interface WebhookMessage {
  readonly id: string;
  /** Seconds since the Unix epoch, as sent in webhook-timestamp. */
  readonly timestamp: number;
  readonly body: string;
}

/** A new secret: `whsec_` and the Base64 of 32 bytes from the system's cryptographic source. */
export function newSigningSecret(): string {
  return SIGNING_SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

/** Whether `text` is a secret newSigningSecret could have made (checked when secrets are read back). */
export function isSigningSecret(text: unknown): text is string {
  return typeof text === 'string' && SIGNING_SECRET.test(text);
}

/**
 * The secrets that sign a callback sent at `now`: the current one, and the previous one while the
 * rotation's grace period lasts (`graceEndsAt` excluded).
 */
export function signingSecretsInUse(secrets: SigningSecrets, graceEndsAt: Date | null, now: Date): string[] {
  return previousSecretExpiry(secrets, graceEndsAt, now) === null ? [secrets.current] : [secrets.current, secrets.previous!];
}

/** When the previous secret stops signing, if it still signs callbacks sent at `now`; null when it does not. */
export function previousSecretExpiry(secrets: SigningSecrets, graceEndsAt: Date | null, now: Date): Date | null {
  return secrets.previous !== undefined && graceEndsAt !== null && now.getTime() < graceEndsAt.getTime() ? graceEndsAt : null;
}

/**
 * The signing secrets after a rotation at `now` to the new secret `next`: for `graceSeconds` (none
 * when 0) callbacks also carry the signature of the secret it replaces (`replaced`, when one is
 * readable), so that the merchant can switch without losing a callback; a secret replaced before
 * is dropped at once.
 */
export function rotatedSigningSecrets(
  replaced: string | undefined,
  graceSeconds: number,
  now: Date,
  next: string,
): { secrets: SigningSecrets; graceEndsAt: Date | null } {
  if (replaced === undefined || graceSeconds <= 0) return { secrets: { current: next }, graceEndsAt: null };
  return { secrets: { current: next, previous: replaced }, graceEndsAt: new Date(now.getTime() + graceSeconds * 1000) };
}

/** One signature, `v1,<base64>`, of the message with `secret`. */
export function signWebhook(secret: string, message: WebhookMessage): string {
  if (!isSigningSecret(secret)) throw new TypeError('A signing secret is whsec_ followed by the Base64 of 32 bytes.');
  const key = Buffer.from(secret.slice(SIGNING_SECRET_PREFIX.length), 'base64');
  const signed = `${message.id}.${message.timestamp}.${message.body}`;
  return `v1,${createHmac('sha256', key).update(signed, 'utf8').digest('base64')}`;
}

/**
 * The three Standard Webhooks headers of a callback: its id and timestamp, and its signature with
 * each of `secrets` (current first), so that the signed values and the sent ones are the same.
 */
export function standardWebhookHeaders(
  message: WebhookMessage,
  secrets: readonly string[],
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  if (secrets.length === 0) throw new TypeError('A callback is signed with at least one secret.');
  return {
    'webhook-id': message.id,
    'webhook-timestamp': String(message.timestamp),
    'webhook-signature': secrets.map((secret) => signWebhook(secret, message)).join(' '),
  };
}
