import { randomUUID } from 'node:crypto';
import { HeraldError, newSigningSecret, rotatedSigningSecrets, targetSwitchState, type TargetOrdering } from '@herald/domain';
import type { DatabasePool } from '../pool';
import type { CredentialsCipher } from '../credentials-cipher';
import { isUniqueViolation } from '../database-errors';
import { inTransaction, run, type RowOf } from '../sql';
import { storedDeliveryPolicy } from '@herald/domain';
import { decryptAuth, deliveryPolicyColumn, deliveryTargetOf, masked, notifications, type TargetRow } from './target-rows';
import { readableCurrent, signingSecretRecord, storedSigning } from './target-signing';
import { targetQueries, type TargetSettings } from './target-statements';
import type { DeliveryTarget, NotificationTargetRecord, SigningSecretRecord, TargetInput, TargetOwner, TargetPage, TargetListFilter } from './target-types';

/** The program or merchant a target is set for does not exist. */
export class TargetOwnerNotFoundError extends HeraldError {
  readonly code = 'owner_not_found';
  constructor(readonly owner: TargetOwner) {
    super(owner.kind === 'program' ? `No program "${owner.programId}".` : `No merchant "${owner.merchantId}".`);
  }
}

/** What the switch-off rule reads of a stored target. */
type SwitchRow = Pick<TargetRow, 'enabled' | 'disabled_reason' | 'disabled_at' | 'failing_since'>;

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

  /**
   * The row `input` makes of target `targetId`, whose switch-off state is `current` as stored
   * (null: a new target); the rule of that state is targetSwitchState.
   */
  const settingsOf = (input: TargetInput, targetId: string, current: SwitchRow | null): TargetSettings => {
    const { auth } = input;
    const switched = targetSwitchState(
      current && { enabled: current.enabled, disabledReason: current.disabled_reason, disabledAt: current.disabled_at, failingSince: current.failing_since },
      input.enabled,
      new Date(),
    );
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
      ordering: input.ordering ?? 'none',
      disabled_reason: switched.disabledReason,
      disabled_at: switched.disabledAt,
      failing_since: switched.failingSince,
      delivery_policy: deliveryPolicyColumn(input.delivery ?? {}),
    };
  };

  const inputOf = (row: RowOf<ReturnType<typeof targetQueries.find>>): TargetInput => ({
    url: row.url,
    auth: decryptAuth(row, cipher),
    notifications: notifications(row),
    enabled: row.enabled,
    ordering: row.ordering as TargetOrdering,
    // Absent when none is set, as a PUT without one gives it.
    ...(row.delivery_policy === null ? {} : { delivery: storedDeliveryPolicy(row.delivery_policy) }),
  });

  const record = (row: RowOf<ReturnType<typeof targetQueries.find>>): NotificationTargetRecord => ({
    id: row.id,
    programId: row.program_id,
    merchantId: row.merchant_id,
    url: row.url,
    auth: masked(decryptAuth(row, cipher)),
    notifications: notifications(row),
    enabled: row.enabled,
    ordering: row.ordering as TargetOrdering,
    disabledReason: row.disabled_reason,
    disabledAt: row.disabled_at,
    delivery: storedDeliveryPolicy(row.delivery_policy),
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
      // existing row by its (immutable) id, locked while its new switch-off state is decided from
      // the stored one, or create with a new id. A concurrent create of the same owner loses on
      // the unique owner key, and the second round updates the winner's row.
      for (let round = 0; ; round += 1) {
        const updated = await inTransaction(pool, async (tx) => {
          const [existing] = (await run(tx, targetQueries.lockByOwner(ownerKey))).rows;
          if (!existing) return null;
          const [row] = (await run(tx, targetQueries.update(existing.id, settingsOf(input, existing.id, existing)))).rows;
          return record(row!);
        });
        if (updated) return updated;
        const id = randomUUID();
        // Created with its signing secret, so that its first callback is signed.
        const signing = cipher.encryptSigningSecrets({ current: newSigningSecret() }, id);
        try {
          const [created] = (await run(pool, targetQueries.insert({ id, ownerKey, ...ids }, settingsOf(input, id, null), signing))).rows;
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
        const [updated] = (await run(tx, targetQueries.update(row.id, settingsOf(input, row.id, row)))).rows;
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

export type TargetRepository = ReturnType<typeof targetRepository>;
