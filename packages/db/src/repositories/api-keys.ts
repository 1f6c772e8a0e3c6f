import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { DatabasePool } from '../pool';
import { db, run, sql, type RowOf } from '../sql';

/** Whose events a key may list: one merchant's, or every event of one program. */
export type ApiKeyScope = { kind: 'merchant'; programId: string; merchantId: string } | { kind: 'program'; programId: string };

const KEY_PREFIX = 'hk_';
const KEY_BYTES = 32;
const SHOWN_PREFIX_LENGTH = KEY_PREFIX.length + 6;
// What create makes: the prefix, then the key's random bytes in base64url without padding.
const KEY_FORMAT = new RegExp(`^${KEY_PREFIX}[A-Za-z0-9_-]{${Math.ceil((KEY_BYTES * 4) / 3)}}$`);

/**
 * Whether `key` has the form of a key Herald makes (`hk_` and 43 base64url characters). Any other
 * value cannot be a key, so it is refused without looking it up.
 */
export function isWellFormedApiKey(key: string): boolean {
  return KEY_FORMAT.test(key);
}

/**
 * The first characters of a key (`hk_` and 6 more), stored beside its hash so that support can
 * tell keys apart. A key whose prefix no stored key has cannot be a key at all.
 */
export function apiKeyPrefixOf(key: string): string {
  return key.slice(0, SHOWN_PREFIX_LENGTH);
}

/** SHA-256 hex: enough for 256-bit random keys, and fast on every request. */
function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** The columns of an ApiKeyRecord, named as its fields. */
const RECORD_COLUMNS = ['id', 'prefix', 'program_id as programId', 'merchant_id as merchantId', 'created_at as createdAt', 'revoked_at as revokedAt'] as const;

/** Every statement of the repository, built from its parameters (the SQL snapshot compiles each). */
export const apiKeyQueries = {
  create: (row: { id: string; keyHash: string; prefix: string; programId: string | null; merchantId: string | null }) =>
    db
      .insertInto('api_keys')
      .values({ id: row.id, key_hash: row.keyHash, prefix: row.prefix, program_id: row.programId, merchant_id: row.merchantId })
      .returning(RECORD_COLUMNS),

  authenticate: (keyHash: string) =>
    db
      .selectFrom('api_keys as k')
      .leftJoin('merchants as m', 'm.id', 'k.merchant_id')
      .select(['k.id', 'k.key_hash', 'k.revoked_at', 'k.program_id', 'm.id as merchant_id', 'm.program_id as merchant_program_id'])
      .where('k.key_hash', '=', keyHash),

  page: (filter: ApiKeyFilter, limit: number, offset: number) =>
    keysOf(filter).select(RECORD_COLUMNS).orderBy('created_at', 'desc').orderBy('id').limit(limit).offset(offset),
  count: (filter: ApiKeyFilter) => keysOf(filter).select((eb) => eb.fn.countAll<string>().as('count')),

  /** The prefixes of the keys in use (not revoked): a few bytes per key, read whole. */
  knownPrefixes: () => db.selectFrom('api_keys').select('prefix').distinct().where('revoked_at', 'is', null),
  // coalesce: revoking twice keeps the first time.
  revoke: (id: string) => db.updateTable('api_keys').set({ revoked_at: sql<Date>`coalesce(revoked_at, now())` }).where('id', '=', id).returning(RECORD_COLUMNS),
};

/** Which keys a list shows: one merchant's, or one program's (its own and its merchants'); revoked ones included. */
export interface ApiKeyFilter {
  programId?: string;
  merchantId?: string;
}

function keysOf(filter: ApiKeyFilter) {
  let query = db.selectFrom('api_keys');
  if (filter.merchantId !== undefined) query = query.where('merchant_id', '=', filter.merchantId);
  if (filter.programId !== undefined) {
    const programId = filter.programId;
    query = query.where((eb) =>
      eb.or([eb('program_id', '=', programId), eb('merchant_id', 'in', eb.selectFrom('merchants').select('id').where('program_id', '=', programId))]),
    );
  }
  return query;
}

/**
 * An API key as admins see it, never the key or its hash: id, prefix (the key's first characters,
 * so support can tell keys apart), programId or merchantId, createdAt, revokedAt. Typed by the
 * statement from the schema.
 */
export type ApiKeyRecord = RowOf<ReturnType<typeof apiKeyQueries.revoke>>;

export function apiKeyRepository(pool: DatabasePool) {
  return {
    /** Creates a key and returns it in clear this once; only its hash is stored. */
    async create(owner: { programId: string } | { merchantId: string }): Promise<{ key: string; record: ApiKeyRecord }> {
      const key = `${KEY_PREFIX}${randomBytes(KEY_BYTES).toString('base64url')}`;
      const { rows } = await run(
        pool,
        apiKeyQueries.create({
          id: randomUUID(),
          keyHash: hashApiKey(key),
          prefix: apiKeyPrefixOf(key),
          programId: 'programId' in owner ? owner.programId : null,
          merchantId: 'merchantId' in owner ? owner.merchantId : null,
        }),
      );
      return { key, record: rows[0]! };
    },

    /** The id and scope of a key that exists and is not revoked, or null. */
    async authenticate(key: string): Promise<{ keyId: string; scope: ApiKeyScope } | null> {
      if (!isWellFormedApiKey(key)) return null;
      const hash = hashApiKey(key);
      // A named statement: this runs on every GET /events that misses the events-api's key cache.
      const { rows } = await run(pool, apiKeyQueries.authenticate(hash), { prepared: 'api-key' });
      const found = rows[0];
      // The lookup is by hash (no timing signal about the key itself); compare again in constant time
      // so that an index collision can never pass for a match.
      if (!found || found.revoked_at || !timingSafeEqual(Buffer.from(found.key_hash), Buffer.from(hash))) return null;
      if (found.merchant_id && found.merchant_program_id) {
        return { keyId: found.id, scope: { kind: 'merchant', programId: found.merchant_program_id, merchantId: found.merchant_id } };
      }
      return found.program_id ? { keyId: found.id, scope: { kind: 'program', programId: found.program_id } } : null;
    },

    /** The prefixes of every key not revoked (apiKeyPrefixOf). */
    async knownPrefixes(): Promise<string[]> {
      return (await run(pool, apiKeyQueries.knownPrefixes())).rows.map((row) => row.prefix);
    },

    /** One page of keys, newest first, never the keys themselves or their hashes. */
    async list(filter: ApiKeyFilter, page: number, pageSize: number): Promise<{ count: number; data: ApiKeyRecord[] }> {
      const [{ rows }, counted] = await Promise.all([
        run(pool, apiKeyQueries.page(filter, pageSize, (page - 1) * pageSize)),
        run(pool, apiKeyQueries.count(filter)),
      ]);
      return { count: Number(counted.rows[0]?.count ?? 0), data: rows };
    },

    /** Revokes a key (give a UUID); null when there is no such key. Revoking twice keeps the first time. */
    async revoke(id: string): Promise<ApiKeyRecord | null> {
      const { rows } = await run(pool, apiKeyQueries.revoke(id));
      return rows[0] ?? null;
    },
  };
}

export type ApiKeyRepository = ReturnType<typeof apiKeyRepository>;
