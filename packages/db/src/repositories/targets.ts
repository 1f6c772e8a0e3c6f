import { randomUUID } from 'node:crypto';
import { isUuid, type CallbackAuthMode, type EventType, type ObjectType } from '@herald/domain';
import type { PrismaClient } from '../client';
import type { CredentialsCipher } from '../credentials-cipher';

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
  createdAt: Date;
  updatedAt: Date;
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
  deletedAt: Date | null;
}

/** The program or merchant a target is set for does not exist. */
export class TargetOwnerNotFoundError extends Error {
  override readonly name = 'TargetOwnerNotFoundError';
  readonly code = 'owner_not_found';
  constructor(readonly owner: TargetOwner) {
    super(owner.kind === 'program' ? `No program "${owner.programId}".` : `No merchant "${owner.merchantId}".`);
  }
}

const COLUMNS = {
  id: true,
  programId: true,
  merchantId: true,
  url: true,
  authMode: true,
  authUrl: true,
  credentials: true,
  objectTypes: true,
  eventTypes: true,
  enabled: true,
  createdAt: true,
  updatedAt: true,
  deletedAt: true,
} as const;

/** A notification_targets row, as the repositories read it. */
export interface TargetRow {
  id: string;
  programId: string;
  merchantId: string | null;
  url: string;
  authMode: string;
  authUrl: string | null;
  credentials: string | null;
  objectTypes: string[];
  eventTypes: string[];
  enabled: boolean;
  createdAt: Date;
  updatedAt: Date;
  deletedAt: Date | null;
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
  const ownerIds = async (owner: TargetOwner): Promise<{ programId: string; merchantId: string | null }> => {
    if (owner.kind === 'program') {
      const program = await prisma.program.findUnique({ where: { id: owner.programId }, select: { id: true } });
      if (!program) throw new TargetOwnerNotFoundError(owner);
      return { programId: program.id, merchantId: null };
    }
    const merchant = await prisma.merchant.findUnique({ where: { id: owner.merchantId }, select: { id: true, programId: true } });
    if (!merchant) throw new TargetOwnerNotFoundError(owner);
    return { programId: merchant.programId, merchantId: merchant.id };
  };

  const columnsFor = (input: TargetInput, targetId: string) => {
    const { auth } = input;
    const encrypted = auth.mode === 'none' ? null : cipher.encrypt({ username: auth.username, password: auth.password }, targetId);
    return {
      url: input.url,
      authMode: auth.mode,
      authUrl: auth.mode === 'oauth' ? auth.authUrl : null,
      credentials: encrypted?.ciphertext ?? null,
      credentialsKeyId: encrypted?.keyId ?? null,
      // Stored empty for "all": a type the spec adds later reaches targets that asked for all.
      objectTypes: input.notifications.objectTypes ?? [],
      eventTypes: input.notifications.eventTypes ?? [],
      enabled: input.enabled,
      deletedAt: null,
    };
  };

  const auth = (row: TargetRow): TargetAuth => decryptAuth(row, cipher);

  const record = (row: TargetRow): NotificationTargetRecord => ({
    id: row.id,
    programId: row.programId,
    merchantId: row.merchantId,
    url: row.url,
    auth: masked(auth(row)),
    notifications: notifications(row),
    enabled: row.enabled,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
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
        const existing = await prisma.notificationTarget.findUnique({ where: { ownerKey }, select: { id: true } });
        if (existing) {
          return record(await prisma.notificationTarget.update({ where: { id: existing.id }, data: columnsFor(input, existing.id), select: COLUMNS }));
        }
        const id = randomUUID();
        try {
          return record(
            await prisma.notificationTarget.create({ data: { id, ownerKey, ...ids, ...columnsFor(input, id) }, select: COLUMNS }),
          );
        } catch (error) {
          if (round > 0 || (error as { code?: string }).code !== 'P2002') throw error;
        }
      }
    },

    /** The owner's target, or null when there is none (or it was deleted). */
    async find(owner: TargetOwner): Promise<NotificationTargetRecord | null> {
      const row = await prisma.notificationTarget.findFirst({ where: { ownerKey: targetOwnerKey(owner), deletedAt: null }, select: COLUMNS });
      return row ? record(row) : null;
    },

    /**
     * Deletes the owner's target softly: it is switched off and hidden, but its row stays so that
     * delivery history keeps its target. False when there was none to delete.
     */
    async remove(owner: TargetOwner): Promise<boolean> {
      const { count } = await prisma.notificationTarget.updateMany({
        where: { ownerKey: targetOwnerKey(owner), deletedAt: null },
        data: { deletedAt: new Date(), enabled: false },
      });
      return count > 0;
    },

    /**
     * One target with its credentials decrypted, as the delivery worker sees it (the worker reads it
     * together with its deliveries: deliveryAttemptRepository.loadForAttempts); null when the id is unknown.
     */
    async loadForDelivery(targetId: string): Promise<DeliveryTarget | null> {
      if (!isUuid(targetId)) return null;
      const row = await prisma.notificationTarget.findUnique({ where: { id: targetId }, select: COLUMNS });
      return row ? deliveryTargetOf(row, cipher) : null;
    },
  };
}

/** A row's auth settings with the credentials decrypted; throws CredentialsCipherError when they cannot be. */
function decryptAuth(row: Pick<TargetRow, 'id' | 'authMode' | 'authUrl' | 'credentials'>, cipher: CredentialsCipher): TargetAuth {
  const mode = row.authMode as CallbackAuthMode;
  if (mode === 'none') return { mode };
  const { username, password } = cipher.decrypt(row.credentials ?? '', row.id);
  return mode === 'basic' ? { mode, username, password } : { mode, authUrl: row.authUrl ?? '', username, password };
}

/** The worker's view of a target row: credentials decrypted (throws CredentialsCipherError when they cannot be). */
export function deliveryTargetOf(row: Omit<TargetRow, 'createdAt' | 'updatedAt'>, cipher: CredentialsCipher): DeliveryTarget {
  return {
    id: row.id,
    programId: row.programId,
    merchantId: row.merchantId,
    url: row.url,
    auth: decryptAuth(row, cipher),
    notifications: notifications(row),
    enabled: row.enabled,
    deletedAt: row.deletedAt,
  };
}

function masked(auth: TargetAuth): MaskedTargetAuth {
  return auth.mode === 'none' ? auth : { ...auth, password: MASKED_PASSWORD };
}

function notifications(row: Pick<TargetRow, 'objectTypes' | 'eventTypes'>): TargetNotifications {
  return {
    ...(row.objectTypes.length > 0 ? { objectTypes: row.objectTypes as ObjectType[] } : {}),
    ...(row.eventTypes.length > 0 ? { eventTypes: row.eventTypes as EventType[] } : {}),
  };
}

export type TargetRepository = ReturnType<typeof targetRepository>;
