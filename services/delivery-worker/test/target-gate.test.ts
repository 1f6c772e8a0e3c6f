// The target gate end to end: real workers (in this process and in separate processes), BullMQ,
// PostgreSQL and HTTP receivers on 127.0.0.1. The transitions themselves are shown one by one in
// packages/queue/test/target-gate.test.ts; here, what they mean for deliveries and attempts.
import type { ServerResponse } from 'node:http';
import { countBreakers, createRedisConnection, readTargetHealth } from '@herald/queue';
import { callbacksPerEvent, metricValue, useMigratedDatabase, waitFor, type Reply } from '@herald/testing';
import { useHttpRecorders, useWorkerProcesses, useWorlds, type World } from './support/world';

// Worker processes run their sweepers: a database of their own, as in main-process.test.ts.
const database = useMigratedDatabase('herald_worker_gate');
const world = useWorlds();
const startReceiver = useHttpRecorders();
const startWorkers = useWorkerProcesses(database);

/** A receiver's answer after `delayMs`, counting the callbacks it holds at once. */
function counting(delayMs: number) {
  const seen = { now: 0, most: 0 };
  const reply: Reply = (res: ServerResponse) => {
    seen.now += 1;
    seen.most = Math.max(seen.most, seen.now);
    setTimeout(() => {
      seen.now -= 1;
      res.end('ok');
    }, delayMs);
  };
  return { seen, responder: () => reply };
}

async function health(w: World, targetId: string) {
  const redis = createRedisConnection(w.config.redisUrl, { role: 'client' });
  redis.on('error', () => undefined);
  try {
    return await readTargetHealth(redis, w.config.queuePrefix, targetId);
  } finally {
    redis.disconnect();
  }
}

/** Every delivery's row, its attempts and its job, by delivery id. */
async function accounts(w: World, deliveryIds: string[]) {
  const rows = await w.prisma.delivery.findMany({ where: { id: { in: deliveryIds } } });
  const attempts = await w.prisma.deliveryAttempt.findMany({ where: { deliveryId: { in: deliveryIds } }, orderBy: { number: 'asc' } });
  const jobs = await Promise.all(deliveryIds.map((id) => w.finishedJob(id)));
  return rows.map((row) => ({
    row,
    attempts: attempts.filter((a) => a.deliveryId === row.id),
    job: jobs.find((job) => job.id === row.id)!,
  }));
}

describe('the target gate in the delivery worker', () => {
  it('keeps a target to TARGET_MAX_IN_FLIGHT callbacks; the jobs it defers spend no attempt and their deferrals are recorded', async () => {
    const w = world({ TARGET_MAX_IN_FLIGHT: '2' }, database.url);
    const { seen, responder } = counting(150);
    const receiver = await startReceiver(responder);
    const { programId, targetId } = await w.createTarget(`${receiver.origin}/hook`);
    const sent = await w.sendEvents(programId, 8);
    w.startWorker();

    const ids = sent.map((s) => s.deliveryId);
    await w.settled(ids, ['succeeded'], 30_000);
    expect(seen.most).toBe(2);
    expect(callbacksPerEvent(receiver).size).toBe(8);
    const all = await accounts(w, ids);
    for (const { row, attempts, job } of all) {
      // One attempt each, however often it was deferred: BullMQ counted one, the log holds one.
      expect(attempts).toHaveLength(1);
      expect(row.attemptsMade).toBe(1);
      expect(job.attemptsMade).toBe(1);
    }
    const deferred = all.filter(({ row }) => row.deferrals > 0);
    expect(deferred.length).toBeGreaterThan(0);
    for (const { row } of deferred) expect(row).toMatchObject({ lastDeferralReason: 'target_busy', lastDeferredAt: expect.any(Date) });
    expect(metricValue(await w.metrics.exposition(), 'herald_delivery_deferrals_total', { reason: 'target_busy' })).toBeGreaterThan(0);
    // Every deferred job came back and went in (most into the worker's leased slots): none is
    // still counted as deferred, which would lengthen the target's next deferrals.
    await waitFor(
      async () => (await health(w, targetId)).deferred,
      (n) => n === 0,
      2_000,
      'no job counted as deferred',
    );
  }, 60_000);

  it('opens the breaker on a hanging target and spends no attempt while it is open; once the target is back, every callback arrives', async () => {
    const w = world(
      {
        TARGET_MAX_IN_FLIGHT: '2',
        TARGET_BREAKER_FAILURES: '2',
        TARGET_BREAKER_OPEN_SECONDS: '2',
        CALLBACK_TIMEOUT_MS: '300',
        DELIVERY_ATTEMPTS: '12',
      },
      database.url,
    );
    // Accepts the connection and never answers.
    const receiver = await startReceiver(() => () => undefined);
    const { programId, targetId } = await w.createTarget(`${receiver.origin}/hook`);
    const sent = await w.sendEvents(programId, 10);
    w.startWorker();

    await waitFor(
      () => health(w, targetId),
      (h) => h.breaker.state === 'open',
      20_000,
      'the breaker to open',
    );
    const openedAt = Date.now();
    receiver.respondWith(() => ({ status: 200, body: 'ok' }));
    // The gauge counts targets per state, never one series per target.
    const redis = createRedisConnection(w.config.redisUrl, { role: 'client' });
    try {
      w.metrics.watchBreakers(() => countBreakers(redis, w.config.queuePrefix));
      const exposition = await w.metrics.exposition();
      expect(metricValue(exposition, 'herald_target_breakers', { state: 'open' })).toBe(1);
      expect(exposition).not.toContain(targetId);
    } finally {
      redis.disconnect();
    }

    const ids = sent.map((s) => s.deliveryId);
    await w.settled(ids, ['succeeded'], 60_000);
    const all = await accounts(w, ids);
    const failed = all.flatMap(({ attempts }) => attempts.filter((a) => a.statusCode !== 200));
    // Only the callbacks in flight when it opened failed: every later one waited for the breaker.
    expect(failed.length).toBeGreaterThanOrEqual(2);
    expect(failed.length).toBeLessThanOrEqual(4);
    for (const attempt of failed) expect(attempt.errorKind).toBe('timeout');
    for (const attempt of failed) expect(attempt.startedAt.getTime()).toBeLessThan(openedAt);
    for (const { row, attempts, job } of all) {
      expect(attempts.filter((a) => a.statusCode === 200)).toHaveLength(1);
      expect(job.attemptsMade).toBe(attempts.length);
      expect(row.attemptsMade).toBe(attempts.length);
    }
    expect(all.some(({ row }) => row.lastDeferralReason === 'breaker_open')).toBe(true);
    expect(callbacksPerEvent(receiver).size).toBe(10);
    expect((await health(w, targetId)).breaker).toMatchObject({ state: 'closed', consecutiveFailures: 0 });
  }, 90_000);

  it('re-opens the breaker when the probe fails, and keeps one probe at a time', async () => {
    const w = world(
      { TARGET_MAX_IN_FLIGHT: '4', TARGET_BREAKER_FAILURES: '1', TARGET_BREAKER_OPEN_SECONDS: '1', CALLBACK_TIMEOUT_MS: '300', DELIVERY_ATTEMPTS: '20' },
      database.url,
    );
    const receiver = await startReceiver(() => () => undefined);
    const { programId, targetId } = await w.createTarget(`${receiver.origin}/hook`);
    const sent = await w.sendEvents(programId, 6);
    w.startWorker();

    await waitFor(
      () => health(w, targetId),
      (h) => h.breaker.state === 'open',
      20_000,
      'the breaker to open',
    );
    // A probe at each half-open time, each timing out: the open time doubles (1 s, 2 s, …).
    const reopened = await waitFor(
      () => health(w, targetId),
      (h) => h.breaker.state === 'open' && Date.parse(h.breaker.halfOpenAt!) - Date.parse(h.breaker.openedAt!) >= 2_000,
      30_000,
      'the breaker to re-open after a failed probe',
    );
    expect(reopened.inFlight).toBeLessThanOrEqual(1);
    receiver.respondWith(() => ({ status: 200 }));
    await w.settled(
      sent.map((s) => s.deliveryId),
      ['succeeded'],
      60_000,
    );
    expect((await health(w, targetId)).breaker.state).toBe('closed');
  }, 90_000);

  it('shares the limit between worker processes', async () => {
    const w = world({}, database.url);
    const { seen, responder } = counting(200);
    const receiver = await startReceiver(responder);
    const { programId, targetId } = await w.createTarget(`${receiver.origin}/hook`);
    const services = await startWorkers(w, 2, { WORKER_CONCURRENCY: '8', TARGET_MAX_IN_FLIGHT: '3' });
    const sent = await w.sendEvents(programId, 16);

    await w.settled(
      sent.map((s) => s.deliveryId),
      ['succeeded'],
      60_000,
    );
    expect(seen.most).toBe(3);
    expect(callbacksPerEvent(receiver).size).toBe(16);
    // Both processes sent callbacks, each within the one shared limit.
    for (const service of services) expect(service.output()).toContain('callback delivered');
    // The slots the workers leased go back once their jobs stop coming (a lease runs 200 ms).
    await waitFor(
      () => health(w, targetId),
      (h) => h.inFlight === 0,
      2_000,
      'the leased slots to go back',
    );
    const rows = await w.prisma.delivery.findMany({ where: { id: { in: sent.map((s) => s.deliveryId) } } });
    expect(rows.every((row) => row.attemptsMade === 1)).toBe(true);
    expect(rows.some((row) => row.deferrals > 0)).toBe(true);
  }, 90_000);

  it("keeps a target to its own policy's in-flight limit across worker processes, and another target to TARGET_MAX_IN_FLIGHT", async () => {
    const w = world({}, database.url);
    const strict = counting(200);
    const lenient = counting(200);
    const strictReceiver = await startReceiver(strict.responder);
    const lenientReceiver = await startReceiver(lenient.responder);
    const strictTarget = await w.createTarget(`${strictReceiver.origin}/hook`);
    const lenientTarget = await w.createTarget(`${lenientReceiver.origin}/hook`);
    const changed = await w
      .targets()
      .change({ kind: 'program', programId: strictTarget.programId }, (current) => ({ ...current, delivery: { maxInFlight: 2 } }));
    expect(changed?.delivery).toEqual({ maxInFlight: 2 });
    const services = await startWorkers(w, 2, { WORKER_CONCURRENCY: '8', TARGET_MAX_IN_FLIGHT: '6' });
    const sent = [...(await w.sendEvents(strictTarget.programId, 16)), ...(await w.sendEvents(lenientTarget.programId, 16))];

    await w.settled(
      sent.map((s) => s.deliveryId),
      ['succeeded'],
      60_000,
    );
    // Never more than the policy's 2 at the strict receiver, whichever process sent them.
    expect(strict.seen.most).toBe(2);
    expect(callbacksPerEvent(strictReceiver).size).toBe(16);
    // The other target was not held to 2: both processes' 8 slots are free for it, up to the setting's 6.
    expect(lenient.seen.most).toBeGreaterThan(2);
    expect(lenient.seen.most).toBeLessThanOrEqual(6);
    for (const service of services) expect(service.output()).toContain('callback delivered');
    const rows = await w.prisma.delivery.findMany({ where: { id: { in: sent.map((s) => s.deliveryId) } } });
    expect(rows.every((row) => row.attemptsMade === 1)).toBe(true);
  }, 90_000);

  it("keeps a target to its policy's maxRatePerSecond across worker processes; the jobs held back spend no attempt", async () => {
    const w = world({}, database.url);
    const receiver = await startReceiver();
    const { programId } = await w.createTarget(`${receiver.origin}/hook`);
    const changed = await w.targets().change({ kind: 'program', programId }, (current) => ({ ...current, delivery: { maxRatePerSecond: 5 } }));
    expect(changed?.delivery).toEqual({ maxRatePerSecond: 5 });
    const services = await startWorkers(w, 2, { WORKER_CONCURRENCY: '8' });
    const sent = await w.sendEvents(programId, 15);

    await w.settled(
      sent.map((s) => s.deliveryId),
      ['succeeded'],
      60_000,
    );
    expect(callbacksPerEvent(receiver).size).toBe(15);
    // Requests per second at the receiver, in any window of one second: the rate, plus the one
    // token a bucket holds at most (a tenth of a second's worth, 1 at least).
    const times = receiver.requests.map((r) => r.receivedAt).sort((a, b) => a - b);
    const busiest = Math.max(...times.map((start) => times.filter((t) => t >= start && t < start + 1_000).length));
    expect(busiest).toBeLessThanOrEqual(6);
    // 15 callbacks at 5 a second take about 3 s: the first, then one every 200 ms.
    expect(times.at(-1)! - times[0]!).toBeGreaterThanOrEqual(2_500);
    const rows = await w.prisma.delivery.findMany({ where: { id: { in: sent.map((s) => s.deliveryId) } } });
    expect(rows.every((row) => row.attemptsMade === 1)).toBe(true);
    expect(rows.some((row) => row.lastDeferralReason === 'rate_limited')).toBe(true);
    for (const service of services) expect(service.output()).toContain('callback delivered');
  }, 90_000);
});
