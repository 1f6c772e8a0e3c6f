import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { sqlPool, type PrismaClient } from '../client';

/** Whose events a key may list: one merchant's, or every event of one program. */
export type ApiKeyScope = { kind: 'merchant'; programId: string; merchantId: string } | { kind: 'program'; programId: string };

export interface ApiKeyRecord {
  id: string;
  /** The first characters of the key, so support can tell keys apart without seeing them. */
  prefix: string;
  programId: string | null;
  merchantId: string | null;
  createdAt: Date;
  revokedAt: Date | null;
}

const KEY_PREFIX = 'hk_';
const SHOWN_PREFIX_LENGTH = KEY_PREFIX.length + 6;

/** SHA-256 hex: enough for 256-bit random keys, and fast on every request. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function apiKeyRepository(prisma: PrismaClient) {
  return {
    /** Creates a key and returns it in clear this once; only its hash is stored. */
    async create(owner: { programId: string } | { merchantId: string }): Promise<{ key: string; record: ApiKeyRecord }> {
      const key = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
      const record = await prisma.apiKey.create({
        data: {
          keyHash: hashApiKey(key),
          prefix: key.slice(0, SHOWN_PREFIX_LENGTH),
          ...('merchantId' in owner ? { merchantId: owner.merchantId } : { programId: owner.programId }),
        },
        select: RECORD_FIELDS,
      });
      return { key, record };
    },

    /** The id and scope of a key that exists and is not revoked, or null. */
    async authenticate(key: string): Promise<{ keyId: string; scope: ApiKeyScope } | null> {
      const hash = hashApiKey(key);
      // Plain SQL: this runs on every GET /events that misses the events-api's key cache.
      const { rows } = await sqlPool(prisma).query<{ id: string; key_hash: string; revoked_at: Date | null; program_id: string | null; merchant_id: string | null; merchant_program_id: string | null }>(
        `SELECT k.id::text AS id, k.key_hash, k.revoked_at, k.program_id, m.id AS merchant_id, m.program_id AS merchant_program_id
         FROM api_keys k LEFT JOIN merchants m ON m.id = k.merchant_id
         WHERE k.key_hash = $1`,
        [hash],
      );
      const found = rows[0];
      // The lookup is by hash (no timing signal about the key itself); compare again in constant time
      // so that an index collision can never pass for a match.
      if (!found || found.revoked_at || !timingSafeEqual(Buffer.from(found.key_hash), Buffer.from(hash))) return null;
      if (found.merchant_id && found.merchant_program_id) {
        return { keyId: found.id, scope: { kind: 'merchant', programId: found.merchant_program_id, merchantId: found.merchant_id } };
      }
      return found.program_id ? { keyId: found.id, scope: { kind: 'program', programId: found.program_id } } : null;
    },

    /** Revokes a key; null when there is no such key. Revoking twice keeps the first time. */
    async revoke(id: string): Promise<ApiKeyRecord | null> {
      const existing = await prisma.apiKey.findUnique({ where: { id }, select: RECORD_FIELDS });
      if (!existing || existing.revokedAt) return existing;
      return prisma.apiKey.update({ where: { id }, data: { revokedAt: new Date() }, select: RECORD_FIELDS });
    },
  };
}

const RECORD_FIELDS = { id: true, prefix: true, programId: true, merchantId: true, createdAt: true, revokedAt: true } as const;

export type ApiKeyRepository = ReturnType<typeof apiKeyRepository>;
