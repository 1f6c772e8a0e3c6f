import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { PrismaClient } from '../client';

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
      const found = await prisma.apiKey.findUnique({
        where: { keyHash: hash },
        select: { id: true, keyHash: true, revokedAt: true, programId: true, merchant: { select: { id: true, programId: true } } },
      });
      // The lookup is by hash (no timing signal about the key itself); compare again in constant time
      // so that an index collision can never pass for a match.
      if (!found || found.revokedAt || !timingSafeEqual(Buffer.from(found.keyHash), Buffer.from(hash))) return null;
      if (found.merchant) {
        return { keyId: found.id, scope: { kind: 'merchant', programId: found.merchant.programId, merchantId: found.merchant.id } };
      }
      return found.programId ? { keyId: found.id, scope: { kind: 'program', programId: found.programId } } : null;
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
