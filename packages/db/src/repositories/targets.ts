import { randomUUID } from 'node:crypto';
import { HeraldError, type CallbackAuthMode, type EventType, type ObjectType } from '@herald/domain';
import type { Selectable } from 'kysely';
import { sqlPool, type PrismaClient } from '../client';
import type { CredentialsCipher } from '../credentials-cipher';
import { isUniqueViolation } from '../database-errors';
import type { NotificationTarget } from '../generated/kysely/schema';
import { db, run, sql, type RowOf } from '../sql';

/** Who a notification target belongs to: a whole program, or one merchant. */
export type TargetOwner = { kind: 'program'; programId: string } | { kind: 'merchant'; merchantId: string };

/** How callbacks authenticate, with the secrets: what an admin sets and what the worker sends. */
export type TargetAuth =
  | { mode: 'none' }
  | { mode: 'basic'; username: string; password: string }
  | { mode: 'oauth'; authUrl: string; username: string; password: string };

/** What every view shows instead of a password. */
export const MASKED_PASSWORD = '********';

/** TargetAuth as views show it: the user name (not a secret) and a fixed mask for the password. */
export type MaskedTargetAuth =
  | { mode: 'none' }
  | { mode: 'basic'; username: string; password: typeof MASKED_PASSWORD }
  | { mode: 'oauth'; authUrl: string; username: string; password: typeof MASKED_PASSWORD };

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
export interface TargetDeliveryHealth {
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
  deletedAt: Date | null;
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
type TargetSettings = Pick<TargetRow, 'url' | 'auth_mode' | 'auth_url' | 'credentials' | 'credentials_key_id' | 'object_types' | 'event_types' | 'enabled'>;

/** The columns a NotificationTargetRecord is made of. */
const RECORD_COLUMNS = [
  'id',
  'program_id',
  'merchant_id',
  'url',
  'auth_mode',
  'auth_url',
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
  insert: (row: { id: string; ownerKey: string; programId: string; merchantId: string | null }, settings: TargetSettings) =>
    db
      .insertInto('notification_targets')
      .values({
        id: row.id,
        owner_key: row.ownerKey,
        program_id: row.programId,
        merchant_id: row.merchantId,
        ...settings,
        disabled_at: settings.enabled ? null : sql<Date>`now()`,
        updated_at: sql<Date>`now()`,
      })
      .returning(RECORD_COLUMNS),
  find: (ownerKey: string) =>
    db.selectFrom('notification_targets').select(RECORD_COLUMNS).where('owner_key', '=', ownerKey).where('deleted_at', 'is', null),
  page: (filter: TargetListFilter, limit: number, offset: number) =>
    listed(filter).select(RECORD_COLUMNS).orderBy('program_id').orderBy('merchant_id', (ob) => ob.asc().nullsFirst()).limit(limit).offset(offset),
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
export function targetRepository(prisma: PrismaClient, cipher: CredentialsCipher) {
  const pool = sqlPool(prisma);

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
      credentials: encrypted?.ciphertext ?? null,
      credentials_key_id: encrypted?.keyId ?? null,
      // Stored empty for "all": a type the spec adds later reaches targets that asked for all.
      object_types: input.notifications.objectTypes ?? [],
      event_types: input.notifications.eventTypes ?? [],
      enabled: input.enabled,
    };
  };

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
        try {
          const [created] = (await run(pool, targetQueries.insert({ id, ownerKey, ...ids }, settingsOf(input, id)))).rows;
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
     * The owner's target settings with the credentials decrypted, for a PATCH to merge its change
     * into (never return them from an API); null when there is no target.
     */
    async findInput(owner: TargetOwner): Promise<TargetInput | null> {
      const [row] = (await run(pool, targetQueries.find(targetOwnerKey(owner)))).rows;
      if (!row) return null;
      return { url: row.url, auth: decryptAuth(row, cipher), notifications: notifications(row), enabled: row.enabled };
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
  };
}

/** A row's auth settings with the credentials decrypted; throws CredentialsCipherError when they cannot be. */
function decryptAuth(row: Pick<TargetRow, 'id' | 'auth_mode' | 'auth_url' | 'credentials'>, cipher: CredentialsCipher): TargetAuth {
  const mode = row.auth_mode as CallbackAuthMode;
  if (mode === 'none') return { mode };
  const { username, password } = cipher.decrypt(row.credentials ?? '', row.id);
  return mode === 'basic' ? { mode, username, password } : { mode, authUrl: row.auth_url ?? '', username, password };
}

/** The worker's view of a target row: credentials decrypted (throws CredentialsCipherError when they cannot be). */
export function deliveryTargetOf(
  row: Pick<
    TargetRow,
    'id' | 'program_id' | 'merchant_id' | 'url' | 'auth_mode' | 'auth_url' | 'credentials' | 'object_types' | 'event_types' | 'enabled' | 'disabled_reason' | 'failing_since' | 'deleted_at'
  >,
  cipher: CredentialsCipher,
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
    deletedAt: row.deleted_at,
  };
}

function masked(auth: TargetAuth): MaskedTargetAuth {
  return auth.mode === 'none' ? auth : { ...auth, password: MASKED_PASSWORD };
}

function notifications(row: Pick<TargetRow, 'object_types' | 'event_types'>): TargetNotifications {
  return {
    ...(row.object_types.length > 0 ? { objectTypes: row.object_types as ObjectType[] } : {}),
    ...(row.event_types.length > 0 ? { eventTypes: row.event_types as EventType[] } : {}),
  };
}

export type TargetRepository = ReturnType<typeof targetRepository>;
