import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { createCredentialsCipher } from '../src/credentials-cipher';
import { createPrismaClient, sqlPool, type PrismaClient } from '../src/prisma-client';
import { deliveryAttemptRepository } from '../src/repositories/delivery-attempts';
import { fillMissingSigningSecrets } from '../src/repositories/target-signing';
import type { TargetInput } from '../src/repositories/target-types';
import { targetRepository } from '../src/repositories/targets';
import { tenantRepository } from '../src/repositories/tenants';
// @herald/testing depends on @herald/db, so this package reaches its helpers by path.
import { storeEvents, uniqueId, useMigratedDatabase } from '../../testing/src';

// A database of its own: the fill walks every target of the table.
const database = useMigratedDatabase('herald_signing');
let prisma: PrismaClient;
beforeAll(() => {
  prisma = createPrismaClient(database.url);
});
afterAll(() => prisma.$disconnect());

const cipher = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: randomBytes(32) } });
const basic: TargetInput = {
  url: 'https://merchant.example/hooks',
  auth: { mode: 'basic', username: 'shop', password: 'pw' },
  notifications: {},
  enabled: true,
};

/** A program's target, stored as before signatures (no signing secrets), with one delivery to it. */
async function targetStoredBeforeSignatures(): Promise<{ targetId: string; deliveryId: string }> {
  const program = await tenantRepository(sqlPool(prisma)).createProgram({ id: uniqueId('prg'), name: 'Program' });
  const { id: targetId } = await targetRepository(sqlPool(prisma), cipher).upsert({ kind: 'program', programId: program.id }, basic);
  await prisma.notificationTarget.update({ where: { id: targetId }, data: { signingSecrets: null, signingKeyId: null } });
  const event = {
    id: `Event-${randomUUID()}`,
    createdAt: '2026-11-22T10:00:00.000Z',
    origin: 'api',
    eventType: 'created',
    objectId: 'o',
    objectType: 'payment',
  } as const;
  const { deliveries } = await storeEvents(sqlPool(prisma), [{ event, programId: program.id, contentHash: randomUUID() }]);
  return { targetId, deliveryId: deliveries[0]!.deliveryId };
}

/** A pool whose every transaction is read-only: any write on it fails. */
function readOnlyPool(): pg.Pool {
  return new pg.Pool({ connectionString: database.url, max: 2, options: '-c default_transaction_read_only=on' });
}

describe("a target's signing secrets", () => {
  it('are given to every target stored before signatures by fillMissingSigningSecrets, once even when two run at once', async () => {
    const stored = await Promise.all([1, 2, 3].map(() => targetStoredBeforeSignatures()));
    const ids = stored.map((s) => s.targetId);

    const [a, b] = await Promise.all([fillMissingSigningSecrets(sqlPool(prisma), cipher, 2), fillMissingSigningSecrets(sqlPool(prisma), cipher, 2)]);
    expect(a + b).toBe(3);
    const rows = await prisma.notificationTarget.findMany({ where: { id: { in: ids } } });
    expect(rows.map((row) => row.signingKeyId)).toEqual(['k1', 'k1', 'k1']);
    for (const row of rows) expect(cipher.decryptSigningSecrets(row.signingSecrets!, row.id).current).toMatch(/^whsec_/);
    expect(await fillMissingSigningSecrets(sqlPool(prisma), cipher)).toBe(0);
  });

  it("are only read by the worker's load of a target: it runs on a read-only session, and gives no secret to a target without", async () => {
    const { targetId, deliveryId } = await targetStoredBeforeSignatures();
    const pool = readOnlyPool();
    try {
      const attempts = deliveryAttemptRepository(pool, cipher);
      // Without secrets the load refuses (the job is tried again) rather than write or send unsigned.
      await expect(attempts.loadForAttempts([deliveryId])).rejects.toThrow(`notification target ${targetId} has no signing secrets`);
      expect((await prisma.notificationTarget.findUniqueOrThrow({ where: { id: targetId } })).signingSecrets).toBeNull();

      await fillMissingSigningSecrets(sqlPool(prisma), cipher);
      const { secret } = (await targetRepository(sqlPool(prisma), cipher).signingSecret({
        kind: 'program',
        programId: (await prisma.notificationTarget.findUniqueOrThrow({ where: { id: targetId } })).programId,
      }))!;
      const work = (await attempts.loadForAttempts([deliveryId])).get(deliveryId)!;
      expect(work.target).toMatchObject({ state: 'ready', target: { id: targetId, signing: { secrets: { current: secret } } } });
    } finally {
      await pool.end();
    }
  });
});
