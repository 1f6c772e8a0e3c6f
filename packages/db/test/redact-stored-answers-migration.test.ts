import { randomBytes, randomUUID } from 'node:crypto';
import { createPrismaClient, sqlPool, type PrismaClient } from '../src/prisma-client';
import { createCredentialsCipher } from '../src/credentials-cipher';
import { readMigrations } from '../src/migrations';
import { deliveryAttemptRepository } from '../src/repositories/delivery-attempts';
import { targetRepository } from '../src/repositories/targets';
import { tenantRepository } from '../src/repositories/tenants';
// @herald/testing depends on @herald/db, so this package reaches its helpers by path.
import { storeEvents, uniqueId, useMigratedDatabase } from '../../testing/src';

// A database of this file's own: the migration's SQL runs again over the whole table, which must
// hold only this file's rows.
const database = useMigratedDatabase('herald_redact_answers');
const cipher = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: randomBytes(32) } });
let prisma: PrismaClient;
beforeAll(() => {
  prisma = createPrismaClient(database.url);
});
afterAll(() => prisma.$disconnect());

const migration = readMigrations().find((m) => m.name.endsWith('_redact_stored_answer_credentials'));

/** A delivery with one failed attempt whose stored answer is `body`, as the worker stored answers before it redacted them. */
async function attemptAnswering(body: string): Promise<string> {
  const program = await tenantRepository(sqlPool(prisma)).createProgram({ id: uniqueId('prg'), name: 'Program' });
  await targetRepository(sqlPool(prisma), cipher).upsert(
    { kind: 'program', programId: program.id },
    { url: 'https://merchant.example/hooks', auth: { mode: 'none' }, notifications: {}, enabled: true },
  );
  const event = {
    id: `Event-${randomUUID()}`,
    createdAt: '2026-11-22T10:00:00.000Z',
    origin: 'api',
    eventType: 'created',
    objectId: 'o',
    objectType: 'payment',
  } as const;
  const { deliveries } = await storeEvents(sqlPool(prisma), [{ event, programId: program.id, contentHash: randomUUID() }]);
  const deliveryId = deliveries[0]!.deliveryId;
  await deliveryAttemptRepository(sqlPool(prisma), cipher).recordAttempts([
    {
      deliveryId,
      attempt: { startedAt: new Date(), durationMs: 5, statusCode: 500, errorKind: 'http_status', errorMessage: 'HTTP 500', responseBody: body },
      outcome: 'failed',
    },
  ]);
  return deliveryId;
}

async function storedBody(deliveryId: string): Promise<string | null> {
  const rows = await prisma.$queryRaw<
    Array<{ response_body: string | null }>
  >`SELECT response_body FROM delivery_attempts WHERE delivery_id = ${deliveryId}::uuid`;
  return rows[0]!.response_body;
}

describe('the migration that redacts credentials in stored merchant answers', () => {
  it('exists, so that it runs with the others', () => {
    expect(migration).toBeDefined();
  });

  // The database carries every migration already: its SQL runs again over rows stored as before.
  const cases: Array<[string, string, string]> = [
    [
      'an echoed Basic header in JSON',
      '{"error":"echo","headers":{"authorization":"Basic c2hvcDpwYTU1LXdvcmQ=","x-api-key":"k-1","host":"h"}}',
      '{"error":"echo","headers":{"authorization":"Basic [REDACTED]","x-api-key":"[REDACTED]","host":"h"}}',
    ],
    ['a Bearer token in text', 'got Authorization: Bearer tok.en-1 at 10:00', 'got Authorization: Bearer [REDACTED] at 10:00'],
    ['a secret-named member of any other value', '{"Password": "hunter \\"2\\"", "note": "ok"}', '{"Password": "[REDACTED]", "note": "ok"}'],
    ['URL user info', 'see https://shop:pa55@merchant.example/x', 'see https://shop:[REDACTED]@merchant.example/x'],
    ['an answer with nothing to redact', '{"error":"down","token_count":3}', '{"error":"down","token_count":3}'],
  ];

  it.each(cases)('redacts %s, and leaves the rest of the answer as it was', async (_what, before, after) => {
    const deliveryId = await attemptAnswering(before);
    await prisma.$executeRawUnsafe(migration!.sql);
    expect(await storedBody(deliveryId)).toBe(after);
    // A second run changes nothing.
    await prisma.$executeRawUnsafe(migration!.sql);
    expect(await storedBody(deliveryId)).toBe(after);
  });
});
