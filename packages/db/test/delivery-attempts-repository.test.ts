import { randomBytes, randomUUID } from 'node:crypto';
import { testDatabaseUrl } from '@herald/config';
import { createPrismaClient } from '../src/client';
import { createCredentialsCipher } from '../src/credentials-cipher';
import { deliveryAttemptRepository } from '../src/repositories/delivery-attempts';
import { eventRepository } from '../src/repositories/events';
import { targetRepository } from '../src/repositories/targets';
import { tenantRepository } from '../src/repositories/tenants';
// @herald/testing depends on @herald/db, so this package reaches its helpers by path.
import { uniqueId } from '../../testing/src';

const prisma = createPrismaClient(testDatabaseUrl());
const attempts = deliveryAttemptRepository(prisma);
afterAll(() => prisma.$disconnect());

/** A new delivery: an event of a fresh program whose target takes everything. */
async function newDelivery(): Promise<string> {
  const program = await tenantRepository(prisma).createProgram({ id: uniqueId('prg'), name: 'Program' });
  const cipher = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: randomBytes(32) } });
  await targetRepository(prisma, cipher).upsert(
    { kind: 'program', programId: program.id },
    { url: 'https://merchant.example/hooks', auth: { mode: 'none' }, notifications: {}, enabled: true },
  );
  const { deliveries } = await eventRepository(prisma).insert([
    {
      event: { id: `Event-${randomUUID()}`, createdAt: new Date().toISOString(), origin: 'api', eventType: 'created', objectId: 'o', objectType: 'payment' },
      programId: program.id,
      contentHash: randomUUID(),
    },
  ]);
  return deliveries[0]!.deliveryId;
}

const at = { startedAt: new Date('2026-11-22T10:00:00.000Z'), durationMs: 12.6 };

describe('the delivery attempt repository', () => {
  it('finds a delivery to attempt, and nothing for an unknown or malformed id', async () => {
    const id = await newDelivery();
    expect(await attempts.findForAttempt(id)).toMatchObject({ id, status: 'pending', attemptsMade: 0 });
    expect(await attempts.findForAttempt(randomUUID())).toBeNull();
    expect(await attempts.findForAttempt('not-a-uuid')).toBeNull();
  });

  it('numbers attempts from the delivery’s count and keeps the delivery’s last outcome', async () => {
    const id = await newDelivery();
    expect(await attempts.record(id, { ...at, statusCode: 500, errorKind: 'http_status', errorMessage: 'HTTP 500', responseBody: 'down' }, 'pending')).toBe(1);
    expect(await attempts.findForAttempt(id)).toMatchObject({ status: 'pending', attemptsMade: 1 });
    expect(await attempts.record(id, { ...at, errorKind: 'timeout', errorMessage: 'no answer' }, 'failed')).toBe(2);
    const failed = await prisma.delivery.findUniqueOrThrow({ where: { id } });
    expect(failed).toMatchObject({ status: 'failed', attemptsMade: 2, lastStatusCode: null, lastError: 'no answer' });
    expect(failed.completedAt).toBeInstanceOf(Date);

    // Retried from the failed set: the next attempt delivers.
    expect(await attempts.record(id, { ...at, statusCode: 200, responseBody: 'ok' }, 'succeeded')).toBe(3);
    expect(await prisma.delivery.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'succeeded', lastStatusCode: 200, lastError: null });
    const rows = await prisma.deliveryAttempt.findMany({ where: { deliveryId: id }, orderBy: { number: 'asc' } });
    expect(rows.map((r) => [r.number, r.statusCode, r.errorKind, r.durationMs])).toEqual([
      [1, 500, 'http_status', 13],
      [2, null, 'timeout', 13],
      [3, 200, null, 13],
    ]);
    expect(rows[0]!.startedAt).toEqual(at.startedAt);
  });

  it('never turns a succeeded delivery back: a late failing attempt only adds its row', async () => {
    const id = await newDelivery();
    await attempts.record(id, { ...at, statusCode: 200 }, 'succeeded');
    expect(await attempts.record(id, { ...at, errorKind: 'timeout', errorMessage: 'no answer' }, 'pending')).toBe(2);
    expect(await prisma.delivery.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'succeeded', attemptsMade: 2, lastStatusCode: 200, lastError: null });
  });

  it('gives two attempts recorded at once different numbers', async () => {
    const id = await newDelivery();
    const numbers = await Promise.all([1, 2, 3, 4].map(() => attempts.record(id, { ...at, statusCode: 503 }, 'pending')));
    expect(numbers.sort()).toEqual([1, 2, 3, 4]);
  });

  it('stores an answer with NUL characters, which PostgreSQL text cannot hold, without them', async () => {
    const id = await newDelivery();
    await attempts.record(id, { ...at, statusCode: 500, errorMessage: 'bad\u0000', responseBody: 'a\u0000b' }, 'pending');
    const [row] = await prisma.deliveryAttempt.findMany({ where: { deliveryId: id } });
    expect(row).toMatchObject({ responseBody: 'ab', errorMessage: 'bad' });
  });

  it('refuses to record an attempt of a delivery that does not exist', async () => {
    await expect(attempts.record(randomUUID(), { ...at, statusCode: 200 }, 'succeeded')).rejects.toThrow('does not exist');
  });
});
