import { randomBytes } from 'node:crypto';
import { createPrismaClient, sqlPool, type PrismaClient } from '../src/prisma-client';
import { createCredentialsCipher, credentialsCipherFromConfig } from '../src/credentials-cipher';
import { reencryptCredentials, type ReencryptionResult } from '../src/credentials-rotation';
import { applyMigrations } from '../src/migrations';
import type { TargetInput } from '../src/repositories/target-types';
import { targetRepository } from '../src/repositories/targets';
import { tenantRepository } from '../src/repositories/tenants';
// @herald/testing depends on @herald/db, so this package reaches its helpers by path.
import { createScratchDatabase, uniqueId } from '../../testing/src';

// A database of its own: re-encryption walks every target of the table.
let prisma: PrismaClient;
let drop: () => Promise<void>;
beforeAll(async () => {
  const scratch = await createScratchDatabase('herald_rotation');
  drop = scratch.drop;
  await applyMigrations(scratch.url);
  prisma = createPrismaClient(scratch.url);
});
afterAll(async () => {
  await prisma.$disconnect();
  await drop();
});

const oldKey = randomBytes(32);
const newKey = randomBytes(32);
const before = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: oldKey } });
const during = credentialsCipherFromConfig({ secretsKey: newKey, secretsKeyId: 'k2', secretsPreviousKeys: { k1: oldKey } });
const after = createCredentialsCipher({ currentKeyId: 'k2', keyring: { k2: newKey } });

const target = (n: number): TargetInput => ({
  url: `https://merchant.example/hooks/${n}`,
  auth:
    n % 2
      ? { mode: 'basic', username: `shop-${n}`, password: `pw-${n}` }
      : { mode: 'oauth', authUrl: 'https://auth.example/token', username: `client-${n}`, password: `secret-${n}` },
  notifications: {},
  enabled: true,
});

async function newProgramTarget(cipher: typeof before, n: number): Promise<string> {
  const program = await tenantRepository(sqlPool(prisma)).createProgram({ id: uniqueId('prg'), name: 'Program' });
  return (await targetRepository(sqlPool(prisma), cipher).upsert({ kind: 'program', programId: program.id }, target(n))).id;
}

describe('reencryptCredentials (SECRETS_KEY rotation)', () => {
  it('rewrites every target under the current key in batches, reports the unreadable ones, and is idempotent', async () => {
    const ids = [await newProgramTarget(before, 1), await newProgramTarget(before, 2), await newProgramTarget(before, 3)];
    const lost = createCredentialsCipher({ currentKeyId: 'k0', keyring: { k0: randomBytes(32) } });
    const unreadableId = await newProgramTarget(lost, 4);
    const noCredentials = await tenantRepository(sqlPool(prisma)).createProgram({ id: uniqueId('prg'), name: 'Program' });
    await targetRepository(sqlPool(prisma), before).upsert({ kind: 'program', programId: noCredentials.id }, { ...target(5), auth: { mode: 'none' } });

    const signingBefore = new Map<string, string>();
    for (const id of ids)
      signingBefore.set(id, before.decryptSigningSecrets((await prisma.notificationTarget.findUniqueOrThrow({ where: { id } })).signingSecrets!, id).current);

    const progress: ReencryptionResult[] = [];
    const result = await reencryptCredentials(sqlPool(prisma), during, { batchSize: 2, onProgress: (p) => progress.push(structuredClone(p)) });

    // Credentials of 3 targets (the fifth has none), signing secrets of 4 (every target has them).
    expect(result).toEqual({
      reencrypted: 7,
      changedMeanwhile: 0,
      unreadable: [
        { targetId: unreadableId, secret: 'credentials', keyId: 'k0', reason: 'unknown_key' },
        { targetId: unreadableId, secret: 'signing secrets', keyId: 'k0', reason: 'unknown_key' },
      ],
    });
    expect(progress.length).toBe(5);
    const rows = await prisma.notificationTarget.findMany({ where: { id: { in: ids } }, select: { credentialsKeyId: true, signingKeyId: true } });
    expect(rows.map((r) => [r.credentialsKeyId, r.signingKeyId])).toEqual([
      ['k2', 'k2'],
      ['k2', 'k2'],
      ['k2', 'k2'],
    ]);
    // The old key can go: the new key alone reads every re-encrypted target, with its secrets intact.
    for (const [i, id] of ids.entries()) {
      const row = await prisma.notificationTarget.findUniqueOrThrow({ where: { id } });
      expect(after.decrypt(row.credentials!, id)).toMatchObject({
        username: expect.stringContaining(`-${i + 1}`),
        password: expect.stringContaining(`-${i + 1}`),
      });
      expect(after.decryptSigningSecrets(row.signingSecrets!, id)).toEqual({ current: signingBefore.get(id) });
    }

    await expect(reencryptCredentials(sqlPool(prisma), during)).resolves.toEqual({
      reencrypted: 0,
      changedMeanwhile: 0,
      unreadable: [expect.objectContaining({ targetId: unreadableId }), expect.objectContaining({ targetId: unreadableId })],
    });
  });
});
