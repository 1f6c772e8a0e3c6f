import { randomBytes, randomUUID } from 'node:crypto';
import { testDatabaseUrl } from '@herald/config';
import { createPrismaClient, sqlPool } from '../src/prisma-client';
import { createCredentialsCipher } from '../src/credentials-cipher';
import { deliveryAttemptRepository, type AttemptOutcome, type NewDeliveryAttempt } from '../src/repositories/delivery-attempts';
import type { LoadedTarget } from '../src/repositories/loaded-target';
import type { DeliveryTarget } from '../src/repositories/target-types';
import { targetRepository } from '../src/repositories/targets';
import { tenantRepository } from '../src/repositories/tenants';
// @herald/testing depends on @herald/db, so this package reaches its helpers by path.
import { storeEvents, uniqueId } from '../../testing/src';

const prisma = createPrismaClient(testDatabaseUrl());
const cipher = createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: randomBytes(32) } });
const attempts = deliveryAttemptRepository(sqlPool(prisma), cipher);
afterAll(() => prisma.$disconnect());

const basicAuth = { mode: 'basic', username: 'shop', password: 'pa55-word' } as const;

/** The stored events' fields but the id; optional fields other than metadata are absent. */
const EVENT_FIELDS = {
  createdAt: '2026-11-22T10:00:00.123Z',
  origin: 'api',
  eventType: 'created',
  objectId: 'o',
  objectType: 'payment',
  metadata: { order: '42' },
} as const;

/** A new delivery: an event of a fresh program whose target (basic auth) takes everything. */
async function newDelivery(targetCipher = cipher): Promise<string> {
  const program = await tenantRepository(sqlPool(prisma)).createProgram({ id: uniqueId('prg'), name: 'Program' });
  await targetRepository(sqlPool(prisma), targetCipher).upsert(
    { kind: 'program', programId: program.id },
    { url: 'https://merchant.example/hooks', auth: basicAuth, notifications: {}, enabled: true },
  );
  const { deliveries } = await storeEvents(sqlPool(prisma), [
    {
      event: { id: `Event-${randomUUID()}`, ...EVENT_FIELDS },
      programId: program.id,
      contentHash: randomUUID(),
    },
  ]);
  return deliveries[0]!.deliveryId;
}

/** Records one attempt, as the worker's batches do, and returns its number. */
async function record(deliveryId: string, attempt: NewDeliveryAttempt, outcome: AttemptOutcome): Promise<number | undefined> {
  const [recorded] = await attempts.recordAttempts([{ deliveryId, attempt, outcome }]);
  return recorded?.number;
}

const at = { startedAt: new Date('2026-11-22T10:00:00.000Z'), durationMs: 12.6 };

describe('the delivery attempt repository', () => {
  it('loads deliveries with their target (credentials decrypted) and event in one call, and nothing for unknown or malformed ids', async () => {
    const [first, second] = [await newDelivery(), await newDelivery()];
    const found = await attempts.loadForAttempts([first, second, randomUUID(), 'not-a-uuid']);
    expect([...found.keys()].sort()).toEqual([first, second].sort());
    const work = found.get(first)!;
    expect(work.delivery).toMatchObject({ id: first, status: 'pending', attemptsMade: 0 });
    expect(work.target).toMatchObject({
      state: 'ready',
      target: { id: work.delivery.targetId, url: 'https://merchant.example/hooks', auth: basicAuth, enabled: true, deletedAt: null },
    });
    // The event exactly as GET /events shows it: absent optional fields are left out.
    expect(JSON.parse(work.eventJson!)).toEqual({ id: work.delivery.eventId, ...EVENT_FIELDS, sequence: 1 });
  });

  it("decrypts a target's secrets once, however many deliveries and batches go to it, and again once they change", async () => {
    const program = await tenantRepository(sqlPool(prisma)).createProgram({ id: uniqueId('prg'), name: 'Program' });
    const owner = { kind: 'program', programId: program.id } as const;
    await targetRepository(sqlPool(prisma), cipher).upsert(owner, { url: 'https://merchant.example/hooks', auth: basicAuth, notifications: {}, enabled: true });
    const { deliveries } = await storeEvents(
      sqlPool(prisma),
      Array.from({ length: 3 }, () => ({ event: { id: `Event-${randomUUID()}`, ...EVENT_FIELDS }, programId: program.id, contentHash: randomUUID() })),
    );
    const ids = deliveries.map((d) => d.deliveryId);
    const counting = { ...cipher, decryptions: 0 };
    counting.decryptSigningSecrets = (...args) => {
      counting.decryptions++;
      return cipher.decryptSigningSecrets(...args);
    };
    counting.decrypt = (...args) => {
      counting.decryptions++;
      return cipher.decrypt(...args);
    };
    const repository = deliveryAttemptRepository(sqlPool(prisma), counting);
    const found = await repository.loadForAttempts(ids);
    expect(found.size).toBe(3);
    // The signing secrets and the credentials: one decryption each.
    expect(counting.decryptions).toBe(2);
    expect(new Set([...found.values()].map((w) => w.target)).size).toBe(1);
    expect([...found.values()][0]!.target).toMatchObject({ state: 'ready', target: { auth: basicAuth } });

    await repository.loadForAttempts(ids.slice(0, 1));
    await repository.loadForAttempts(ids.slice(1));
    expect(counting.decryptions).toBe(2);

    const changed = { ...basicAuth, password: 'n3w-pa55-word' };
    await targetRepository(sqlPool(prisma), cipher).upsert(owner, { url: 'https://merchant.example/hooks', auth: changed, notifications: {}, enabled: true });
    const rotated = await targetRepository(sqlPool(prisma), cipher).rotateSigningSecret(owner, 0);
    const reloaded = readyTarget((await repository.loadForAttempts(ids.slice(0, 1))).get(ids[0]!)!.target);
    expect(reloaded.auth).toEqual(changed);
    expect(reloaded.signing.secrets.current).toBe(rotated!.secret);
    expect(counting.decryptions).toBe(4);
  });

  it('shows the worker an oauth target with its credentials, and a deleted target as switched off', async () => {
    const id = await newDelivery();
    const { programId } = readyTarget((await attempts.loadForAttempts([id])).get(id)!.target);
    const owner = { kind: 'program', programId } as const;
    const oauth = { mode: 'oauth', authUrl: 'https://merchant.example/token', username: 'client', password: 'pa55-word' } as const;
    await targetRepository(sqlPool(prisma), cipher).upsert(owner, { url: 'https://merchant.example/hooks', auth: oauth, notifications: {}, enabled: true });
    expect((await attempts.loadForAttempts([id])).get(id)!.target).toMatchObject({ state: 'ready', target: { auth: oauth, enabled: true, deletedAt: null } });

    await targetRepository(sqlPool(prisma), cipher).remove(owner);
    expect((await attempts.loadForAttempts([id])).get(id)!.target).toMatchObject({ state: 'ready', target: { enabled: false, deletedAt: expect.any(Date) } });
  });

  it('gives a target whose credentials no key decrypts as unreadable, saying which key, for its own delivery only', async () => {
    const unreadable = await newDelivery(createCredentialsCipher({ currentKeyId: 'k1', keyring: { k1: randomBytes(32) } }));
    const readable = await newDelivery();
    const found = await attempts.loadForAttempts([unreadable, readable]);
    expect(found.get(unreadable)!.target).toEqual({ state: 'unreadable', message: expect.stringMatching(/k1/) });
    expect(found.get(readable)!.target).toMatchObject({ state: 'ready', target: { auth: basicAuth } });
  });

  it('numbers attempts from the delivery’s count and keeps the delivery’s last outcome', async () => {
    const id = await newDelivery();
    expect(await record(id, { ...at, statusCode: 500, errorKind: 'http_status', errorMessage: 'HTTP 500', responseBody: 'down' }, 'pending')).toBe(1);
    expect((await attempts.loadForAttempts([id])).get(id)!.delivery).toMatchObject({ status: 'pending', attemptsMade: 1 });
    expect(await record(id, { ...at, errorKind: 'timeout', errorMessage: 'no answer' }, 'failed')).toBe(2);
    const failed = await prisma.delivery.findFirstOrThrow({ where: { id } });
    expect(failed).toMatchObject({ status: 'failed', attemptsMade: 2, lastStatusCode: null, lastError: 'no answer' });
    expect(failed.completedAt).toBeInstanceOf(Date);

    // Retried from the failed set: the next attempt delivers.
    expect(await record(id, { ...at, statusCode: 200, responseBody: 'ok' }, 'succeeded')).toBe(3);
    expect(await prisma.delivery.findFirstOrThrow({ where: { id } })).toMatchObject({ status: 'succeeded', lastStatusCode: 200, lastError: null });
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
    await record(id, { ...at, statusCode: 200 }, 'succeeded');
    expect(await record(id, { ...at, errorKind: 'timeout', errorMessage: 'no answer' }, 'pending')).toBe(2);
    expect(await prisma.delivery.findFirstOrThrow({ where: { id } })).toMatchObject({
      status: 'succeeded',
      attemptsMade: 2,
      lastStatusCode: 200,
      lastError: null,
    });
  });

  it('gives two attempts recorded at once different numbers', async () => {
    const id = await newDelivery();
    const numbers = await Promise.all([1, 2, 3, 4].map(() => record(id, { ...at, statusCode: 503 }, 'pending')));
    expect(numbers.sort()).toEqual([1, 2, 3, 4]);
  });

  it('records attempts of several deliveries in one call, in order, a delivery named twice included', async () => {
    const [a, b] = [await newDelivery(), await newDelivery()];
    const numbers = await attempts.recordAttempts([
      { deliveryId: a, attempt: { ...at, statusCode: 500 }, outcome: 'pending' },
      { deliveryId: b, attempt: { ...at, statusCode: 200 }, outcome: 'succeeded' },
      { deliveryId: randomUUID(), attempt: { ...at, statusCode: 200 }, outcome: 'succeeded' },
      { deliveryId: a, attempt: { ...at, statusCode: 200 }, outcome: 'succeeded' },
    ]);
    expect(numbers.map((recorded) => recorded?.number)).toEqual([1, 1, undefined, 2]);
    const rows = await prisma.deliveryAttempt.findMany({ where: { deliveryId: a }, orderBy: { number: 'asc' } });
    expect(rows.map((r) => r.statusCode)).toEqual([500, 200]);
    expect(await prisma.delivery.findMany({ where: { id: { in: [a, b] } }, orderBy: { id: 'asc' } })).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: a, status: 'succeeded', attemptsMade: 2 }),
        expect.objectContaining({ id: b, status: 'succeeded', attemptsMade: 1 }),
      ]),
    );
  });

  it('stores an answer with NUL characters, which PostgreSQL text cannot hold, without them', async () => {
    const id = await newDelivery();
    await record(id, { ...at, statusCode: 500, errorMessage: 'bad\u0000', responseBody: 'a\u0000b' }, 'pending');
    const [row] = await prisma.deliveryAttempt.findMany({ where: { deliveryId: id } });
    expect(row).toMatchObject({ responseBody: 'ab', errorMessage: 'bad' });
  });

  it('records nothing for a delivery that does not exist, or a malformed id', async () => {
    const missing = randomUUID();
    expect(
      await attempts.recordAttempts([
        { deliveryId: missing, attempt: { ...at, statusCode: 200 }, outcome: 'succeeded' },
        { deliveryId: 'not-a-uuid', attempt: at, outcome: 'failed' },
      ]),
    ).toEqual([undefined, undefined]);
    expect(await prisma.deliveryAttempt.count({ where: { deliveryId: missing } })).toBe(0);
  });

  it("records deferrals apart from attempts: one statement adds each delivery's count and keeps its latest time and reason", async () => {
    const [first, second] = [await newDelivery(), await newDelivery()];
    const t = (s: number) => new Date(Date.UTC(2026, 10, 22, 10, 0, s));
    await attempts.recordDeferrals([
      { deliveryId: first, reason: 'target_busy', at: t(1) },
      { deliveryId: first, reason: 'breaker_open', at: t(3) },
      { deliveryId: first, reason: 'target_busy', at: t(2) },
      { deliveryId: second, reason: 'breaker_open', at: t(5) },
      { deliveryId: randomUUID(), reason: 'breaker_open', at: t(5) },
      { deliveryId: 'not-a-uuid', reason: 'breaker_open', at: t(5) },
    ]);
    await attempts.recordDeferrals([{ deliveryId: second, reason: 'target_busy', at: t(9) }]);
    const rows = await prisma.delivery.findMany({ where: { id: { in: [first, second] } } });
    const byId = new Map(rows.map((row) => [row.id, row]));
    expect(byId.get(first)).toMatchObject({ deferrals: 3, lastDeferredAt: t(3), lastDeferralReason: 'breaker_open', attemptsMade: 0, status: 'pending' });
    expect(byId.get(second)).toMatchObject({ deferrals: 2, lastDeferredAt: t(9), lastDeferralReason: 'target_busy', attemptsMade: 0 });
    expect(await prisma.deliveryAttempt.count({ where: { deliveryId: { in: [first, second] } } })).toBe(0);
  });
});

describe("the targets' health, recorded with each batch of attempts", () => {
  /** A program whose target has `n` deliveries; returns the target id and the delivery ids. */
  async function deliveriesToOneTarget(n: number): Promise<{ targetId: string; deliveryIds: string[] }> {
    const program = await tenantRepository(sqlPool(prisma)).createProgram({ id: uniqueId('prg'), name: 'Program' });
    const target = await targetRepository(sqlPool(prisma), cipher).upsert(
      { kind: 'program', programId: program.id },
      { url: 'https://merchant.example/hooks', auth: { mode: 'none' }, notifications: {}, enabled: true },
    );
    const { deliveries } = await storeEvents(
      sqlPool(prisma),
      Array.from({ length: n }, () => ({ event: { id: `Event-${randomUUID()}`, ...EVENT_FIELDS }, programId: program.id, contentHash: randomUUID() })),
    );
    return { targetId: target.id, deliveryIds: deliveries.map((d) => d.deliveryId) };
  }
  const failed = (deliveryId: string, startedAt: Date, disableTarget = false) => ({
    deliveryId,
    attempt: { startedAt, durationMs: 5, statusCode: 500 },
    outcome: 'pending' as const,
    disableTarget,
  });
  const target = (id: string) => prisma.notificationTarget.findUniqueOrThrow({ where: { id } });

  it('starts a run of failures at the earliest failure and keeps it; a success in the batch ends it', async () => {
    const { targetId, deliveryIds } = await deliveriesToOneTarget(3);
    const [a, b, c] = deliveryIds as [string, string, string];
    const t0 = new Date('2026-11-22T10:00:00.000Z');
    await attempts.recordAttempts([failed(a, new Date(t0.getTime() + 1_000)), failed(b, t0)]);
    expect(await target(targetId)).toMatchObject({ failingSince: t0, lastSuccessAt: null, enabled: true });
    await attempts.recordAttempts([failed(c, new Date(t0.getTime() + 5_000))]);
    expect((await target(targetId)).failingSince).toEqual(t0);

    const success = new Date(t0.getTime() + 9_000);
    await attempts.recordAttempts([
      failed(a, success),
      { deliveryId: c, attempt: { startedAt: success, durationMs: 5, statusCode: 200 }, outcome: 'succeeded' },
    ]);
    expect(await target(targetId)).toMatchObject({ failingSince: null, lastSuccessAt: success });
  });

  it('writes no target row while its health stays the same: successes within a minute of the last one kept, failures of a running run', async () => {
    const { targetId, deliveryIds } = await deliveriesToOneTarget(6);
    const [a, b, c, d, e, f] = deliveryIds as [string, string, string, string, string, string];
    // xmin names the transaction that last wrote the row: unchanged means not written (nor locked for it).
    const version = async () =>
      (await prisma.$queryRaw<Array<{ xmin: string }>>`SELECT xmin::text FROM notification_targets WHERE id = ${targetId}::uuid`)[0]!.xmin;
    const succeeded = (deliveryId: string, startedAt: Date) => ({
      deliveryId,
      attempt: { startedAt, durationMs: 5, statusCode: 200 },
      outcome: 'succeeded' as const,
    });
    const t0 = new Date('2026-11-22T10:00:00.000Z');

    await attempts.recordAttempts([succeeded(a, t0)]);
    const afterFirstSuccess = await version();
    await attempts.recordAttempts([succeeded(b, new Date(t0.getTime() + 30_000))]);
    expect(await version()).toBe(afterFirstSuccess);
    expect((await target(targetId)).lastSuccessAt).toEqual(t0);
    await attempts.recordAttempts([succeeded(c, new Date(t0.getTime() + 61_000))]);
    expect((await target(targetId)).lastSuccessAt).toEqual(new Date(t0.getTime() + 61_000));

    await attempts.recordAttempts([failed(d, new Date(t0.getTime() + 70_000))]);
    const afterFirstFailure = await version();
    await attempts.recordAttempts([failed(e, new Date(t0.getTime() + 80_000))]);
    expect(await version()).toBe(afterFirstFailure);
    await attempts.recordAttempts([succeeded(f, new Date(t0.getTime() + 90_000))]);
    expect(await target(targetId)).toMatchObject({ failingSince: null, lastSuccessAt: new Date(t0.getTime() + 90_000) });
  });

  it('runs no health statement for attempts the worker saw change nothing, but still records them', async () => {
    const { targetId, deliveryIds } = await deliveriesToOneTarget(2);
    const [a, b] = deliveryIds as [string, string];
    const t0 = new Date('2026-11-22T10:00:00.000Z');
    // A failure would start a run of failures; marked as changing nothing, the target is not touched.
    const recorded = await attempts.recordAttempts([{ ...failed(a, t0), changesTargetHealth: false }]);
    expect(recorded).toEqual([{ number: 1, targetAutoDisabled: false }]);
    expect(await target(targetId)).toMatchObject({ failingSince: null, lastSuccessAt: null });
    await attempts.recordAttempts([{ ...failed(b, t0), changesTargetHealth: true }]);
    expect((await target(targetId)).failingSince).toEqual(t0);
  });

  it('switches a still failing target off once, reported by one attempt of the batch', async () => {
    const { targetId, deliveryIds } = await deliveriesToOneTarget(2);
    const t0 = new Date('2026-11-20T10:00:00.000Z');
    await attempts.recordAttempts([failed(deliveryIds[0]!, t0)]);
    const recorded = await attempts.recordAttempts(deliveryIds.map((id) => failed(id, new Date(), true)));
    expect(recorded.filter((r) => r?.targetAutoDisabled)).toHaveLength(1);
    expect(await target(targetId)).toMatchObject({ enabled: false, disabledReason: 'auto-disabled', failingSince: t0, disabledAt: expect.any(Date) });
  });

  it('leaves a target alone when asked to switch it off with no run of failures (a success or an admin came first)', async () => {
    const { targetId, deliveryIds } = await deliveriesToOneTarget(1);
    const [recorded] = await attempts.recordAttempts([failed(deliveryIds[0]!, new Date(), true)]);
    expect(recorded).toMatchObject({ number: 1, targetAutoDisabled: false });
    expect(await target(targetId)).toMatchObject({ enabled: true, disabledReason: null });
  });
});

/** The target of a loaded delivery, which the test expects to be usable. */
function readyTarget(loaded: LoadedTarget): DeliveryTarget {
  if (loaded.state !== 'ready') throw new Error(`the target is ${loaded.state}`);
  return loaded.target;
}
