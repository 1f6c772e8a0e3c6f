import { randomBytes, randomUUID } from 'node:crypto';
import { testDatabaseUrl } from '@herald/config';
import { createPrismaClient, sqlPool } from '../src/prisma-client';
import { createCredentialsCipher } from '../src/credentials-cipher';
import { MASKED_PASSWORD, type TargetInput } from '../src/repositories/target-types';
import { targetRepository, TargetOwnerNotFoundError } from '../src/repositories/targets';
import { tenantRepository } from '../src/repositories/tenants';
// @herald/testing depends on @herald/db, so this package reaches its helpers by path.
import { uniqueId } from '../../testing/src';

const prisma = createPrismaClient(testDatabaseUrl());
const cipher = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: randomBytes(32) } });
const targets = targetRepository(sqlPool(prisma), cipher);
const tenants = tenantRepository(sqlPool(prisma));
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
    expect(second).toMatchObject({
      id: first.id,
      auth: { mode: 'none' },
      notifications: { objectTypes: ['payment'], eventTypes: ['created'] },
      enabled: false,
    });
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

describe('the signing secret of a notification target', () => {
  it('is made with the target, stored only encrypted, kept when the target is replaced, and never in its record', async () => {
    const { merchantId } = await newMerchant();
    const owner = { kind: 'merchant', merchantId } as const;
    const stored = await targets.upsert(owner, basic);
    const first = await targets.signingSecret(owner);
    expect(first).toEqual({ targetId: stored.id, secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/), previousSecretExpiresAt: null });

    const row = await prisma.notificationTarget.findUniqueOrThrow({ where: { id: stored.id } });
    expect(row.signingKeyId).toBe('k1');
    expect(JSON.stringify(row)).not.toContain(first!.secret.slice('whsec_'.length));
    expect(JSON.stringify(await targets.find(owner))).not.toContain(first!.secret.slice('whsec_'.length));

    await targets.upsert(owner, { ...basic, url: 'https://merchant.example/other' });
    expect((await targets.signingSecret(owner))!.secret).toBe(first!.secret);
  });

  it('is made on first use for a target stored before signatures, once even when asked for concurrently', async () => {
    const { merchantId } = await newMerchant();
    const owner = { kind: 'merchant', merchantId } as const;
    const { id } = await targets.upsert(owner, basic);
    await prisma.notificationTarget.update({ where: { id }, data: { signingSecrets: null, signingKeyId: null } });

    const [a, b] = await Promise.all([targets.signingSecret(owner), targets.signingSecret(owner)]);
    expect(a!.secret).toMatch(/^whsec_/);
    expect(b!.secret).toBe(a!.secret);
    expect((await targets.signingSecret(owner))!.secret).toBe(a!.secret);
  });

  it('rotates to a new secret, keeping the previous one for the grace period only', async () => {
    const { merchantId } = await newMerchant();
    const owner = { kind: 'merchant', merchantId } as const;
    const { id } = await targets.upsert(owner, basic);
    const before = (await targets.signingSecret(owner))!.secret;
    const now = new Date();

    const rotated = await targets.rotateSigningSecret(owner, 3_600, now);
    expect(rotated).toEqual({ targetId: id, secret: expect.stringMatching(/^whsec_/), previousSecretExpiresAt: new Date(now.getTime() + 3_600_000) });
    expect(rotated!.secret).not.toBe(before);
    const row = await prisma.notificationTarget.findUniqueOrThrow({ where: { id } });
    expect(cipher.decryptSigningSecrets(row.signingSecrets!, id)).toEqual({ current: rotated!.secret, previous: before });
    expect(row.signingGraceEnds).toEqual(rotated!.previousSecretExpiresAt);
    expect(await targets.signingSecret(owner, new Date(now.getTime() + 3_600_000))).toMatchObject({ secret: rotated!.secret, previousSecretExpiresAt: null });

    // Without a grace period the replaced secret is dropped at once.
    const again = await targets.rotateSigningSecret(owner, 0, now);
    expect(cipher.decryptSigningSecrets((await prisma.notificationTarget.findUniqueOrThrow({ where: { id } })).signingSecrets!, id)).toEqual({
      current: again!.secret,
    });
    expect(again!.previousSecretExpiresAt).toBeNull();
  });

  it('keeps every concurrent rotation: each replaces the secret the one before it wrote', async () => {
    const { merchantId } = await newMerchant();
    const owner = { kind: 'merchant', merchantId } as const;
    const { id } = await targets.upsert(owner, basic);
    const results = await Promise.all([1, 2, 3].map(() => targets.rotateSigningSecret(owner, 60)));
    const { current } = cipher.decryptSigningSecrets((await prisma.notificationTarget.findUniqueOrThrow({ where: { id } })).signingSecrets!, id);
    expect(results.map((r) => r!.secret)).toContain(current);
    expect(new Set(results.map((r) => r!.secret)).size).toBe(3);
  });

  it('can be rotated when no key reads the stored one any more (the remedy), without a grace period', async () => {
    const { merchantId } = await newMerchant();
    const owner = { kind: 'merchant', merchantId } as const;
    const { id } = await targets.upsert(owner, basic);
    const lost = createCredentialsCipher({ currentKeyId: 'k0', keyring: { k0: randomBytes(32) } });
    await prisma.notificationTarget.update({
      where: { id },
      data: { signingSecrets: lost.encryptSigningSecrets({ current: `whsec_${'A'.repeat(43)}=` }, id).ciphertext },
    });
    await expect(targets.signingSecret(owner)).rejects.toMatchObject({ reason: 'unknown_key', secret: 'signing secrets' });

    const rotated = await targets.rotateSigningSecret(owner, 3_600);
    expect(rotated).toMatchObject({ previousSecretExpiresAt: null });
    expect(await targets.signingSecret(owner)).toEqual(rotated);
  });

  it('is null for an owner without a target', async () => {
    const { merchantId } = await newMerchant();
    expect(await targets.signingSecret({ kind: 'merchant', merchantId })).toBeNull();
    expect(await targets.rotateSigningSecret({ kind: 'merchant', merchantId }, 60)).toBeNull();
  });
});
