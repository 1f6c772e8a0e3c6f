import { db, sql } from '../sql';
import type { TargetRow } from './target-rows';
import type { TargetListFilter } from './target-types';

/**
 * What a target's row holds besides its owner: all of it set by every upsert, the switch-off state
 * as targetSwitchState (@herald/domain) decided it.
 */
export type TargetSettings = Pick<
  TargetRow,
  | 'url'
  | 'auth_mode'
  | 'auth_url'
  | 'token_request'
  | 'oauth_scope'
  | 'credentials'
  | 'credentials_key_id'
  | 'object_types'
  | 'event_types'
  | 'enabled'
  | 'ordering'
  | 'disabled_reason'
  | 'disabled_at'
  | 'failing_since'
  | 'delivery_policy'
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
  'ordering',
  'disabled_reason',
  'disabled_at',
  'last_success_at',
  'failing_since',
  'delivery_policy',
  'created_at',
  'updated_at',
] as const;

/** Every statement of the repository, built from its parameters (the SQL snapshot compiles each). */
export const targetQueries = {
  findProgram: (programId: string) => db.selectFrom('programs').select('id').where('id', '=', programId),
  findMerchant: (merchantId: string) => db.selectFrom('merchants').select(['id', 'program_id']).where('id', '=', merchantId),
  /** The owner's target row (deleted or not), its switch-off state locked until the transaction ends: an upsert writes it back. */
  lockByOwner: (ownerKey: string) =>
    db
      .selectFrom('notification_targets')
      .select(['id', 'enabled', 'disabled_reason', 'disabled_at', 'failing_since'])
      .where('owner_key', '=', ownerKey)
      .forUpdate(),
  // A replaced target is alive again (deleted_at cleared): same row, same id.
  update: (id: string, settings: TargetSettings) =>
    db
      .updateTable('notification_targets')
      .set({ ...settings, deleted_at: null, updated_at: sql<Date>`now()` })
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
  /** The next batch of targets stored before signatures (no signing secrets), by id. */
  withoutSigning: (afterId: string | undefined, limit: number) =>
    db
      .selectFrom('notification_targets')
      .select('id')
      .where('signing_secrets', 'is', null)
      .$if(afterId !== undefined, (q) => q.where('id', '>', afterId!))
      .orderBy('id')
      .limit(limit),
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
