import { randomBytes, randomUUID } from 'node:crypto';
import { testDatabaseUrl } from '@herald/config';
import type { TargetOrdering } from '@herald/domain';
import { createPrismaClient, sqlPool } from '../src/prisma-client';
import { createCredentialsCipher } from '../src/credentials-cipher';
import { deliveryAttemptRepository } from '../src/repositories/delivery-attempts';
import { objectOrderRepository } from '../src/repositories/object-order';
import { targetRepository } from '../src/repositories/targets';
import { tenantRepository } from '../src/repositories/tenants';
// @herald/testing depends on @herald/db, so this package reaches its helpers by path.
import { storeEvents, uniqueId } from '../../testing/src';

const prisma = createPrismaClient(testDatabaseUrl());
const pool = sqlPool(prisma);
const cipher = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: randomBytes(32) } });
const attempts = deliveryAttemptRepository(pool, cipher);
const order = objectOrderRepository(pool);
afterAll(() => prisma.$disconnect());

const at = { startedAt: new Date('2026-11-28T10:00:00.000Z'), durationMs: 5 };

/** A program whose target has `ordering`, and the deliveries of `objects` (one event each, in this order, in one ingest). */
async function chain(ordering: TargetOrdering, objects: string[]): Promise<Array<{ deliveryId: string; storedAt: Date }>> {
  const program = await tenantRepository(pool).createProgram({ id: uniqueId('prg'), name: 'Program' });
  await targetRepository(pool, cipher).upsert(
    { kind: 'program', programId: program.id },
    { url: 'https://merchant.example/hooks', auth: { mode: 'none' }, notifications: {}, enabled: true, ordering },
  );
  const { deliveries } = await storeEvents(
    pool,
    objects.map((objectId) => ({
      event: { id: `Event-${randomUUID()}`, createdAt: '2026-11-28T10:00:00.000Z', origin: 'api', eventType: 'updated', objectId, objectType: 'payment' },
      programId: program.id,
      contentHash: randomUUID(),
    })),
  );
  return deliveries.map((d) => ({ deliveryId: d.deliveryId, storedAt: new Date(d.storedAt!) }));
}

async function predecessorsLoaded(ids: string[]): Promise<Array<string | null>> {
  const found = await attempts.loadForAttempts(ids);
  return ids.map((id) => found.get(id)!.predecessorId);
}

describe('ordered delivery in the database', () => {
  it("loads each delivery's nearest earlier pending delivery of the same object to an ordered target, and none for another object", async () => {
    const [a1, b1, a2, a3] = await chain('object', ['a', 'b', 'a', 'a']);
    expect(await predecessorsLoaded([a1!.deliveryId, b1!.deliveryId, a2!.deliveryId, a3!.deliveryId])).toEqual([null, null, a1!.deliveryId, a2!.deliveryId]);
    // A final outcome takes a delivery out of the chain: the next one looks past it.
    await attempts.recordAttempts([{ deliveryId: a2!.deliveryId, storedAt: a2!.storedAt, attempt: { ...at, statusCode: 200 }, outcome: 'succeeded' }]);
    expect(await predecessorsLoaded([a3!.deliveryId])).toEqual([a1!.deliveryId]);
  });

  it('loads no predecessor for a target that delivers in any order', async () => {
    const [first, second] = await chain('none', ['a', 'a']);
    expect(await predecessorsLoaded([first!.deliveryId, second!.deliveryId])).toEqual([null, null]);
  });

  it('marks a delivery waiting for its predecessor, finds it again once the predecessor ends, and clears the mark with its own attempt', async () => {
    const [first, second] = await chain('object', ['a', 'a']);
    const predecessor = await order.predecessor(second!);
    expect(predecessor).toBe(first!.deliveryId);
    await order.markWaiting(second!, predecessor!, new Date());
    expect(await order.isPending(first!.deliveryId)).toBe(true);
    // Still pending: the wait is not orphaned.
    expect(await order.orphanedWaits(100_000)).not.toContain(second!.deliveryId);

    await attempts.recordAttempts([{ deliveryId: first!.deliveryId, storedAt: first!.storedAt, attempt: { ...at, statusCode: 200 }, outcome: 'succeeded' }]);
    expect(await order.isPending(first!.deliveryId)).toBe(false);
    expect(await order.waitingFor([first!])).toEqual(new Map([[first!.deliveryId, [second!.deliveryId]]]));
    // Had its worker stopped before waking it, the reconciler would find it.
    expect(await order.orphanedWaits(100_000)).toContain(second!.deliveryId);

    await attempts.recordAttempts([{ deliveryId: second!.deliveryId, storedAt: second!.storedAt, attempt: { ...at, statusCode: 200 }, outcome: 'succeeded' }]);
    expect(await order.orphanedWaits(100_000)).not.toContain(second!.deliveryId);
    const row = await prisma.delivery.findFirstOrThrow({ where: { id: second!.deliveryId } });
    expect(row).toMatchObject({ waitingFor: null, deferrals: 1, lastDeferralReason: 'awaiting_predecessor' });
  });

  it('finds no predecessor once every earlier delivery of the object has its outcome', async () => {
    const [first, second] = await chain('object', ['a', 'a']);
    await attempts.recordAttempts([{ deliveryId: first!.deliveryId, storedAt: first!.storedAt, attempt: { ...at, statusCode: 500 }, outcome: 'failed' }]);
    expect(await order.predecessor(second!)).toBeNull();
  });
});
