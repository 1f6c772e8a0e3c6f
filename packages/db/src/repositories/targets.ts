import { randomUUID } from 'node:crypto';
import {
  HeraldError,
  newSigningSecret,
  previousSecretExpiry,
  rotatedSigningSecrets,
  type CallbackAuthMode,
  type EventType,
  type OAuthTokenRequest,
  type ObjectType,
  type SigningSecrets,
} from '@herald/domain';
import type { Selectable } from 'kysely';
import type { DatabasePool } from '../pool';
import { CredentialsCipherError, type CredentialsCipher } from '../credentials-cipher';
import { isUniqueViolation } from '../database-errors';
import type { NotificationTarget } from '../generated/kysely/schema';
import { db, inTransaction, run, sql, type RowOf, type Sql } from '../sql';

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
  /** Why the target is switched off: `auto-disabled`, or null (on, or switched off by an admin). */
  disabledReason: string | null;
  /** When the target was switched off; null while it is on. */
  disabledAt: Date | null;
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
  /** Why the target is switched off (`auto-disabled`), or null. */
  disabledReason: string | null;
  /** Start of the current run of failed attempts; null when the last attempt succeeded. */
  failingSince: Date | null;
  /** When an attempt last succeeded (to within LAST_SUCCESS_PRECISION_MS); null if none has. */
  lastSuccessAt: Date | null;
  deletedAt: Date | null;
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

/** The program or merchant a target is set for does not exist. */
export class TargetOwnerNotFoundError extends HeraldError {
  readonly code = 'owner_not_found';
  constructor(readonly owner: TargetOwner) {
    super(owner.kind === 'program' ? `No program "${owner.programId}".` : `No merchant "${owner.merchantId}".`);
  }
}

/** A notification_targets row, as the schema types it. */
export type TargetRow = Selectable<NotificationTarget>;

/** What a target's row holds besides its owner: all of it set by every upsert. */
type TargetSettings = Pick<
  TargetRow,
  'url' | 'auth_mode' | 'auth_url' | 'token_request' | 'oauth_scope' | 'credentials' | 'credentials_key_id' | 'object_types' | 'event_types' | 'enabled'
>;

/** The columns a NotificationTargetRecord is made of. */
const RECORD_COLUMNS = [
  'id',
  'program_id',
  'merchant_id',
  'url',
  'auth_mode',
  'auth_url',
  'token_request',
  'oauth_scope',
  'credentials',
  'object_types',
  'event_types',
  'enabled',
  'disabled_reason',
  'disabled_at',
  'last_success_at',
  'failing_since',
  'created_at',
  'updated_at',
] as const;

/**
 * What a PUT or PATCH does to a target's switch-off state, from its new `enabled`: switching it on
 * clears the reason and the time, and a target switched on again after being off starts with no
 * run of failures (its merchant fixed it; the next failure starts a new run). Switching it off by
 * hand keeps the reason and time of an earlier switch-off.
 */
const switchState = (enabled: boolean) =>
  enabled
    ? {
        disabled_reason: sql<string | null>`NULL`,
        disabled_at: sql<Date | null>`NULL`,
        failing_since: sql<Date | null>`CASE WHEN notification_targets.enabled THEN notification_targets.failing_since END`,
      }
    : {
        disabled_reason: sql<string | null>`CASE WHEN notification_targets.enabled THEN NULL ELSE notification_targets.disabled_reason END`,
        disabled_at: sql<Date>`coalesce(notification_targets.disabled_at, now())`,
      };

/** Every statement of the repository, built from its parameters (the SQL snapshot compiles each). */
export const targetQueries = {
  findProgram: (programId: string) => db.selectFrom('programs').select('id').where('id', '=', programId),
  findMerchant: (merchantId: string) => db.selectFrom('merchants').select(['id', 'program_id']).where('id', '=', merchantId),
  findIdByOwner: (ownerKey: string) => db.selectFrom('notification_targets').select('id').where('owner_key', '=', ownerKey),
  // A replaced target is alive again (deleted_at cleared): same row, same id.
  update: (id: string, settings: TargetSettings) =>
    db
      .updateTable('notification_targets')
      .set({ ...settings, ...switchState(settings.enabled), deleted_at: null, updated_at: sql<Date>`now()` })
      .where('id', '=', id)
      .returning(RECORD_COLUMNS),
  insert: (
    row: { id: string; ownerKey: string; programId: string; merchantId: string | null },
    settings: TargetSettings,
    signing: { ciphertext: string; keyId: string },
  ) =>
    db
      .insertInto('notification_targets')
      .values({
        id: row.id,
        owner_key: row.ownerKey,
        program_id: row.programId,
        merchant_id: row.merchantId,
        ...settings,
        signing_secrets: signing.ciphertext,
        signing_key_id: signing.keyId,
        disabled_at: settings.enabled ? null : sql<Date>`now()`,
        updated_at: sql<Date>`now()`,
      })
      .returning(RECORD_COLUMNS),
  find: (ownerKey: string) => db.selectFrom('notification_targets').select(RECORD_COLUMNS).where('owner_key', '=', ownerKey).where('deleted_at', 'is', null),
  /** A live target's row, locked until the transaction ends: a PATCH merges into it and writes it back. */
  findForChange: (ownerKey: string) =>
    db.selectFrom('notification_targets').select(RECORD_COLUMNS).where('owner_key', '=', ownerKey).where('deleted_at', 'is', null).forUpdate(),
  /** A live target's signing secrets, as stored. */
  findSigning: (ownerKey: string) =>
    db
      .selectFrom('notification_targets')
      .select(['id', 'signing_secrets', 'signing_grace_ends_at'])
      .where('owner_key', '=', ownerKey)
      .where('deleted_at', 'is', null),
  /** Stores the first signing secrets of a target created before signatures, unless someone else just did. */
  fillSigning: (id: string, encrypted: { ciphertext: string; keyId: string }) =>
    db
      .updateTable('notification_targets')
      .set({ signing_secrets: encrypted.ciphertext, signing_key_id: encrypted.keyId, signing_grace_ends_at: null })
      .where('id', '=', id)
      .where('signing_secrets', 'is', null)
      .returning(['signing_secrets', 'signing_grace_ends_at']),
  readSigning: (id: string) => db.selectFrom('notification_targets').select(['signing_secrets', 'signing_grace_ends_at']).where('id', '=', id),
  /** Replaces the signing secrets only if they are still those that were read (a concurrent rotation wins). */
  rotateSigning: (id: string, read: string | null, encrypted: { ciphertext: string; keyId: string }, graceEndsAt: Date | null) =>
    db
      .updateTable('notification_targets')
      .set({ signing_secrets: encrypted.ciphertext, signing_key_id: encrypted.keyId, signing_grace_ends_at: graceEndsAt, updated_at: sql<Date>`now()` })
      .where('id', '=', id)
      .where('signing_secrets', 'is not distinct from', read),
  findForSending: (ownerKey: string) =>
    db
      .selectFrom('notification_targets')
      .select([...RECORD_COLUMNS, 'deleted_at', 'signing_secrets', 'signing_grace_ends_at'])
      .where('owner_key', '=', ownerKey)
      .where('deleted_at', 'is', null),
  page: (filter: TargetListFilter, limit: number, offset: number) =>
    listed(filter)
      .select(RECORD_COLUMNS)
      .orderBy('program_id')
      .orderBy('merchant_id', (ob) => ob.asc().nullsFirst())
      .limit(limit)
      .offset(offset),
  count: (filter: TargetListFilter) => listed(filter).select((eb) => eb.fn.countAll<string>().as('count')),
  remove: (ownerKey: string) =>
    db
      .updateTable('notification_targets')
      .set({ deleted_at: sql<Date>`now()`, enabled: false, updated_at: sql<Date>`now()` })
      .where('owner_key', '=', ownerKey)
      .where('deleted_at', 'is', null),
};

/** The live targets a list filter matches. */
function listed(filter: TargetListFilter) {
  let query = db.selectFrom('notification_targets').where('deleted_at', 'is', null);
  if (filter.programId !== undefined) query = query.where('program_id', '=', filter.programId);
  if (filter.merchantId !== undefined) query = query.where('merchant_id', '=', filter.merchantId);
  return query;
}

/** `program:<id>` or `merchant:<id>`: the unique key of a target's row. */
export function targetOwnerKey(owner: TargetOwner): string {
  return owner.kind === 'program' ? `program:${owner.programId}` : `merchant:${owner.merchantId}`;
}

/**
 * Notification targets, one per program or merchant. Credentials are encrypted with `cipher`
 * before they reach the database, bound to the target's id; deleting only switches a target off.
 */
export function targetRepository(pool: DatabasePool, cipher: CredentialsCipher) {
  const ownerIds = async (owner: TargetOwner): Promise<{ programId: string; merchantId: string | null }> => {
    if (owner.kind === 'program') {
      const [program] = (await run(pool, targetQueries.findProgram(owner.programId))).rows;
      if (!program) throw new TargetOwnerNotFoundError(owner);
      return { programId: program.id, merchantId: null };
    }
    const [merchant] = (await run(pool, targetQueries.findMerchant(owner.merchantId))).rows;
    if (!merchant) throw new TargetOwnerNotFoundError(owner);
    return { programId: merchant.program_id, merchantId: merchant.id };
  };

  const settingsOf = (input: TargetInput, targetId: string): TargetSettings => {
    const { auth } = input;
    const encrypted = auth.mode === 'none' ? null : cipher.encrypt({ username: auth.username, password: auth.password }, targetId);
    return {
      url: input.url,
      auth_mode: auth.mode,
      auth_url: auth.mode === 'oauth' ? auth.authUrl : null,
      token_request: auth.mode === 'oauth' ? (auth.tokenRequest ?? 'spec') : null,
      oauth_scope: auth.mode === 'oauth' ? (auth.scope ?? null) : null,
      credentials: encrypted?.ciphertext ?? null,
      credentials_key_id: encrypted?.keyId ?? null,
      // Stored empty for "all": a type the spec adds later reaches targets that asked for all.
      object_types: input.notifications.objectTypes ?? [],
      event_types: input.notifications.eventTypes ?? [],
      enabled: input.enabled,
    };
  };

  const inputOf = (row: RowOf<ReturnType<typeof targetQueries.find>>): TargetInput => ({
    url: row.url,
    auth: decryptAuth(row, cipher),
    notifications: notifications(row),
    enabled: row.enabled,
  });

  const record = (row: RowOf<ReturnType<typeof targetQueries.find>>): NotificationTargetRecord => ({
    id: row.id,
    programId: row.program_id,
    merchantId: row.merchant_id,
    url: row.url,
    auth: masked(decryptAuth(row, cipher)),
    notifications: notifications(row),
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    disabledAt: row.disabled_at,
    health: { lastSuccessAt: row.last_success_at, failingSince: row.failing_since },
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  });

  return {
    /**
     * Creates or replaces the owner's target, reviving a deleted one (same row, same id). Throws
     * TargetOwnerNotFoundError when the program or merchant does not exist.
     */
    async upsert(owner: TargetOwner, input: TargetInput): Promise<NotificationTargetRecord> {
      const ids = await ownerIds(owner);
      const ownerKey = targetOwnerKey(owner);
      // The ciphertext is bound to the row's id, so the id must be known before writing: update an
      // existing row by its (immutable) id, or create with a new id. A concurrent create of the
      // same owner loses on the unique owner key, and the second round updates the winner's row.
      for (let round = 0; ; round += 1) {
        const [existing] = (await run(pool, targetQueries.findIdByOwner(ownerKey))).rows;
        if (existing) {
          const [updated] = (await run(pool, targetQueries.update(existing.id, settingsOf(input, existing.id)))).rows;
          // Gone between the two statements: targets are never deleted, so this cannot happen.
          return record(updated!);
        }
        const id = randomUUID();
        // Created with its signing secret, so that its first callback is signed.
        const signing = cipher.encryptSigningSecrets({ current: newSigningSecret() }, id);
        try {
          const [created] = (await run(pool, targetQueries.insert({ id, ownerKey, ...ids }, settingsOf(input, id), signing))).rows;
          return record(created!);
        } catch (error) {
          if (round > 0 || !isUniqueViolation(error)) throw error;
        }
      }
    },

    /** The owner's target, or null when there is none (or it was deleted). */
    async find(owner: TargetOwner): Promise<NotificationTargetRecord | null> {
      const [row] = (await run(pool, targetQueries.find(targetOwnerKey(owner)))).rows;
      return row ? record(row) : null;
    },

    /**
     * The owner's target with its credentials decrypted, to send to it now (a test callback), or
     * null when there is none. Never return it from an API or log it. Throws CredentialsCipherError
     * when the credentials cannot be decrypted.
     */
    async findForSending(owner: TargetOwner): Promise<DeliveryTarget | null> {
      const [row] = (await run(pool, targetQueries.findForSending(targetOwnerKey(owner)))).rows;
      return row ? deliveryTargetOf(row, cipher, await storedSigning(pool, cipher, row.id, row)) : null;
    },

    /**
     * The owner's target settings with the credentials decrypted, for a PATCH to merge its change
     * into (never return them from an API); null when there is no target.
     */
    async findInput(owner: TargetOwner): Promise<TargetInput | null> {
      const [row] = (await run(pool, targetQueries.find(targetOwnerKey(owner)))).rows;
      return row ? inputOf(row) : null;
    },

    /**
     * Changes the owner's live target: `change` gets the stored settings (credentials decrypted)
     * and returns the new ones, while the row is locked, so that two concurrent changes of
     * different fields both stay. Null when there is no target.
     */
    async change(owner: TargetOwner, change: (current: TargetInput) => TargetInput): Promise<NotificationTargetRecord | null> {
      return inTransaction(pool, async (tx) => {
        const [row] = (await run(tx, targetQueries.findForChange(targetOwnerKey(owner)))).rows;
        if (!row) return null;
        const input = change(inputOf(row));
        const [updated] = (await run(tx, targetQueries.update(row.id, settingsOf(input, row.id)))).rows;
        return record(updated!);
      });
    },

    /** One page of live targets, program targets before their merchants' ones. */
    async list(filter: TargetListFilter, page: number, pageSize: number): Promise<TargetPage> {
      const [{ rows }, counted] = await Promise.all([
        run(pool, targetQueries.page(filter, pageSize, (page - 1) * pageSize)),
        run(pool, targetQueries.count(filter)),
      ]);
      return { count: Number(counted.rows[0]?.count ?? 0), targets: rows.map(record) };
    },

    /**
     * Deletes the owner's target softly: it is switched off and hidden, but its row stays so that
     * delivery history keeps its target. False when there was none to delete.
     */
    async remove(owner: TargetOwner): Promise<boolean> {
      return (await run(pool, targetQueries.remove(targetOwnerKey(owner)))).rowCount > 0;
    },

    /** The owner's signing secret (generated first for a target created before signatures), or null when there is no target. */
    async signingSecret(owner: TargetOwner, now = new Date()): Promise<SigningSecretRecord | null> {
      const [row] = (await run(pool, targetQueries.findSigning(targetOwnerKey(owner)))).rows;
      if (!row) return null;
      return signingSecretRecord(row.id, await storedSigning(pool, cipher, row.id, row), now);
    },

    /**
     * Gives the owner's target a new signing secret. For `graceSeconds` (none when 0) callbacks
     * also carry the replaced secret's signature, so that the merchant can switch without losing a
     * callback; a secret replaced before is dropped at once. Null when there is no target.
     */
    async rotateSigningSecret(owner: TargetOwner, graceSeconds: number, now = new Date()): Promise<SigningSecretRecord | null> {
      for (;;) {
        const [row] = (await run(pool, targetQueries.findSigning(targetOwnerKey(owner)))).rows;
        if (!row) return null;
        const replaced = row.signing_secrets === null ? undefined : readableCurrent(cipher, row.signing_secrets, row.id);
        const { secrets, graceEndsAt } = rotatedSigningSecrets(replaced, graceSeconds, now, newSigningSecret());
        const encrypted = cipher.encryptSigningSecrets(secrets, row.id);
        const { rowCount } = await run(pool, targetQueries.rotateSigning(row.id, row.signing_secrets, encrypted, graceEndsAt));
        // Another rotation came first: rotate again from what it wrote.
        if (rowCount === 1) return signingSecretRecord(row.id, { secrets, graceEndsAt }, now);
      }
    },
  };
}

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
function readableCurrent(cipher: CredentialsCipher, ciphertext: string, targetId: string): string | undefined {
  try {
    return cipher.decryptSigningSecrets(ciphertext, targetId).current;
  } catch (error) {
    if (error instanceof CredentialsCipherError) return undefined;
    throw error;
  }
}

function signingSecretRecord(targetId: string, signing: TargetSigning, now: Date): SigningSecretRecord {
  const { secrets, graceEndsAt } = signing;
  return { targetId, secret: secrets.current, previousSecretExpiresAt: previousSecretExpiry(secrets, graceEndsAt, now) };
}

/** A row's auth settings with the credentials decrypted; throws CredentialsCipherError when they cannot be. */
function decryptAuth(
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
    | 'disabled_reason'
    | 'failing_since'
    | 'last_success_at'
    | 'deleted_at'
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
    disabledReason: row.disabled_reason,
    failingSince: row.failing_since,
    lastSuccessAt: row.last_success_at,
    deletedAt: row.deleted_at,
    signing,
  };
}

function masked(auth: TargetAuth): MaskedTargetAuth {
  if (auth.mode === 'oauth') return { ...auth, tokenRequest: auth.tokenRequest ?? 'spec', password: MASKED_PASSWORD };
  return auth.mode === 'none' ? auth : { ...auth, password: MASKED_PASSWORD };
}

function notifications(row: Pick<TargetRow, 'object_types' | 'event_types'>): TargetNotifications {
  return {
    ...(row.object_types.length > 0 ? { objectTypes: row.object_types as ObjectType[] } : {}),
    ...(row.event_types.length > 0 ? { eventTypes: row.event_types as EventType[] } : {}),
  };
}

export type TargetRepository = ReturnType<typeof targetRepository>;
