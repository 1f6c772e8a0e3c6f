import { randomBytes, randomUUID } from 'node:crypto';
import { testDatabaseUrl } from '@herald/config';
import { createPrismaClient } from '../src/client';
import { createCredentialsCipher } from '../src/credentials-cipher';
import { MASKED_PASSWORD, targetRepository, TargetOwnerNotFoundError, type TargetInput } from '../src/repositories/targets';
import { tenantRepository } from '../src/repositories/tenants';
// @herald/testing depends on @herald/db, so this package reaches its helpers by path.
import { uniqueId } from '../../testing/src';

const prisma = createPrismaClient(testDatabaseUrl());
const cipher = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: randomBytes(32) } });
const targets = targetRepository(prisma, cipher);
const tenants = tenantRepository(prisma);
afterAll(() => prisma.$disconnect());

async function newMerchant(): Promise<{ programId: string; merchantId: string }> {
  const program = await tenants.createProgram({ id: uniqueId('prg'), name: 'Program' });
  const merchant = await tenants.createMerchant({ id: uniqueId('mch'), programId: program.id, name: 'Merchant' });
  return { programId: program.id, merchantId: merchant.id };
}

const password = `pw-${randomUUID()}`;
const basic: TargetInput = {
  url: 'https://merchant.example/hooks',
  auth: { mode: 'basic', username: 'shop', password },
  notifications: {},
  enabled: true,
};

describe('the notification target repository', () => {
  it('stores a merchant target under the merchant and its program, and masks the password', async () => {
    const { programId, merchantId } = await newMerchant();
    const stored = await targets.upsert({ kind: 'merchant', merchantId }, basic);
    expect(stored).toMatchObject({
      programId,
      merchantId,
      url: basic.url,
      auth: { mode: 'basic', username: 'shop', password: MASKED_PASSWORD },
      notifications: {},
      enabled: true,
    });
    expect(await targets.find({ kind: 'merchant', merchantId })).toEqual(stored);
    expect(await targets.find({ kind: 'program', programId })).toBeNull();
  });

  it('keeps only ciphertext in the credentials column, bound to the row id', async () => {
    const { programId } = await newMerchant();
    const stored = await targets.upsert({ kind: 'program', programId }, basic);
    const [row] = await prisma.$queryRaw<Array<Record<string, unknown>>>`SELECT * FROM notification_targets WHERE id = ${stored.id}::uuid`;
    expect(JSON.stringify(row)).not.toContain(password);
    expect(row).toMatchObject({ credentials: expect.stringMatching(/^v1\.k1\./), credentials_key_id: 'k1', auth_mode: 'basic' });
    expect(cipher.decrypt(String(row!.credentials), stored.id)).toEqual({ username: 'shop', password });
  });

  it('replaces a target in place, clearing the credentials when the mode becomes none', async () => {
    const { programId } = await newMerchant();
    const first = await targets.upsert({ kind: 'program', programId }, basic);
    const second = await targets.upsert(
      { kind: 'program', programId },
      { url: 'https://other.example/x', auth: { mode: 'none' }, notifications: { objectTypes: ['payment'], eventTypes: ['created'] }, enabled: false },
    );
    expect(second).toMatchObject({ id: first.id, auth: { mode: 'none' }, notifications: { objectTypes: ['payment'], eventTypes: ['created'] }, enabled: false });
    const row = await prisma.notificationTarget.findUniqueOrThrow({ where: { id: first.id } });
    expect(row).toMatchObject({ credentials: null, credentialsKeyId: null, authUrl: null });
  });

  it('deletes softly, and a later upsert revives the same row', async () => {
    const { merchantId } = await newMerchant();
    const owner = { kind: 'merchant', merchantId } as const;
    const created = await targets.upsert(owner, basic);
    expect(await targets.remove(owner)).toBe(true);
    expect(await targets.find(owner)).toBeNull();
    expect(await targets.remove(owner)).toBe(false);
    expect(await prisma.notificationTarget.findUniqueOrThrow({ where: { id: created.id } })).toMatchObject({ enabled: false, deletedAt: expect.any(Date) });

    const revived = await targets.upsert(owner, basic);
    expect(revived.id).toBe(created.id);
    expect(await targets.find(owner)).toMatchObject({ id: created.id, enabled: true });
    expect(await prisma.notificationTarget.findUniqueOrThrow({ where: { id: created.id } })).toMatchObject({ enabled: true, deletedAt: null });
  });

  it('refuses an owner that does not exist', async () => {
    await expect(targets.upsert({ kind: 'program', programId: uniqueId('nobody') }, basic)).rejects.toBeInstanceOf(TargetOwnerNotFoundError);
    await expect(targets.upsert({ kind: 'merchant', merchantId: uniqueId('nobody') }, basic)).rejects.toThrow(/No merchant/);
  });

  it('leaves one readable row when the same new owner is set concurrently', async () => {
    const { programId } = await newMerchant();
    const owner = { kind: 'program', programId } as const;
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) => targets.upsert(owner, { ...basic, auth: { mode: 'basic', username: `user${i}`, password } })),
    );
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(await prisma.notificationTarget.count({ where: { programId, merchantId: null } })).toBe(1);
    const row = await prisma.notificationTarget.findUniqueOrThrow({ where: { id: results[0]!.id } });
    expect(cipher.decrypt(row.credentials!, row.id)).toMatchObject({ password });
  });
});
