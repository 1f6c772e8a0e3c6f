// The target gate's limiter and circuit breaker on the real Redis, with the clock in the test's
// hands (the gate passes its own time to Redis), so that each transition is shown exactly.
import { randomBytes, randomUUID } from 'node:crypto';
import {
  countBreakers,
  createRedisConnection,
  createTargetGate,
  pingRedis,
  readTargetHealth,
  targetKeys,
  type GateVerdict,
  type RedisConnection,
  type TargetGateSettings,
} from '../src';
import { GATE_SCRIPT } from '../src/target-gate/gate-script';
import { SLOT_TIME_DECAY } from '../src/target-gate/target-gate';

const REDIS_URL = 'redis://127.0.0.1:6379';
const SETTINGS: TargetGateSettings = {
  maxInFlight: 2,
  leaseMs: 60_000,
  breaker: { failures: 3, ratio: 0, windowMs: 300_000, minRequests: 10, openMs: 30_000, openMaxMs: 100_000 },
};

let redis: RedisConnection;
let prefix: string;
let clock: number;
beforeEach(async () => {
  redis = createRedisConnection(REDIS_URL, { role: 'client' });
  await pingRedis(redis);
  prefix = `test_${randomBytes(6).toString('hex')}`;
  clock = 1_800_000_000_000;
});
afterEach(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

/** A gate on the test's clock; `random` 0.5 makes every jitter its mean. */
function gate(settings: Partial<Omit<TargetGateSettings, 'breaker'>> & { breaker?: Partial<TargetGateSettings['breaker']> } = {}) {
  const merged = { ...SETTINGS, ...settings, breaker: { ...SETTINGS.breaker, ...settings.breaker } };
  const g = createTargetGate(redis, { queuePrefix: prefix, settings: merged, now: () => clock, random: () => 0.5 });
  return {
    admit: async (targetId: string, jobId: string) => (await g.admit([{ targetId, jobId }]))[0]!,
    /** Asks for `count` new jobs of the target in one batch; answers the deferrals' delays. */
    admitMany: async (targetId: string, count: number) =>
      (await g.admit(Array.from({ length: count }, () => ({ targetId, jobId: randomUUID() })))) as Array<{ delayMs: number }>,
    release: async (targetId: string, jobId: string, verdict: GateVerdict) => (await g.release([{ targetId, jobId, verdict, durationMs: 1_000 }]))[0],
    /** The job's receiver answered and asked for a pause of `pauseMs` (Retry-After on a 429 or 503). */
    pause: async (targetId: string, jobId: string, pauseMs: number) =>
      (await g.release([{ targetId, jobId, verdict: 'answer', durationMs: 1_000, pauseMs }]))[0],
    health: (targetId: string) => readTargetHealth(redis, prefix, targetId, clock),
    /** Renews `holder`'s lease of the target's slots; `contended` only when the gate says so. */
    lease: async (targetId: string, holder: string, keep: number, want: number, since = 0) => {
      const { held, free, contended } = (await g.settle([], [], [{ targetId, holder, keep, want, since }])).grants[0]!;
      return contended ? { held, free, contended } : { held, free };
    },
    /** Sends `times` successes of leased jobs as one release. */
    successes: async (targetId: string, times: number) => (await g.release([{ targetId, jobId: 'leased', verdict: 'success', durationMs: 1_000, times }]))[0],
  };
}

/** Lets a job in and ends it with `verdict`; answers what that did to the breaker. */
async function attempt(g: ReturnType<typeof gate>, target: string, verdict: GateVerdict) {
  const job = randomUUID();
  expect(await g.admit(target, job)).toMatchObject({ admitted: true });
  return g.release(target, job, verdict);
}

describe('the target gate', () => {
  describe('in-flight limit', () => {
    it('lets TARGET_MAX_IN_FLIGHT jobs of a target in, defers the next as target_busy, and lets it in once a slot is free', async () => {
      const g = gate();
      const target = randomUUID();
      expect(await g.admit(target, 'j1')).toEqual({ admitted: true, probe: false });
      expect(await g.admit(target, 'j2')).toEqual({ admitted: true, probe: false });
      const busy = await g.admit(target, 'j3');
      expect(busy).toMatchObject({ admitted: false, reason: 'target_busy' });
      expect(await g.health(target)).toMatchObject({ inFlight: 2, deferred: 1 });
      // Another target is not concerned.
      expect(await g.admit(randomUUID(), 'j4')).toMatchObject({ admitted: true });

      await g.release(target, 'j1', 'success');
      expect(await g.admit(target, 'j3')).toEqual({ admitted: true, probe: false });
      expect(await g.health(target)).toMatchObject({ inFlight: 2, deferred: 0 });
    });

    it('settles releases before admissions in one call: a slot freed in the batch goes to a job of the same batch', async () => {
      const g = createTargetGate(redis, { queuePrefix: prefix, settings: SETTINGS, now: () => clock, random: () => 0.5 });
      const [full, other] = [randomUUID(), randomUUID()];
      await g.admit([
        { targetId: full, jobId: 'j1' },
        { targetId: full, jobId: 'j2' },
      ]);
      const { changes, admissions } = await g.settle(
        [{ targetId: full, jobId: 'j1', verdict: 'success', durationMs: 10 }],
        [
          { targetId: full, jobId: 'j3' },
          { targetId: other, jobId: 'j4' },
          { targetId: full, jobId: 'j5' },
        ],
      );
      expect(changes).toEqual([undefined]);
      expect(admissions).toEqual([
        { admitted: true, probe: false },
        { admitted: true, probe: false },
        expect.objectContaining({ admitted: false, reason: 'target_busy' }),
      ]);
      expect(await readTargetHealth(redis, prefix, full, clock)).toMatchObject({ inFlight: 2, deferred: 1 });
    });

    it('counts a job let in again (its worker died, another took it over) once', async () => {
      const g = gate();
      const target = randomUUID();
      await g.admit(target, 'j1');
      await g.admit(target, 'j2');
      expect(await g.admit(target, 'j1')).toMatchObject({ admitted: true });
      expect((await g.health(target)).inFlight).toBe(2);
    });

    it('frees the slot of a job whose lease ran out (a worker killed mid-callback)', async () => {
      const g = gate();
      const target = randomUUID();
      await g.admit(target, 'j1');
      await g.admit(target, 'j2');
      clock += SETTINGS.leaseMs + 1;
      expect(await g.admit(target, 'j3')).toMatchObject({ admitted: true });
      expect((await g.health(target)).inFlight).toBe(1);
    });

    it('spaces a busy target’s deferrals by its backlog per slot and how long a slot is held', async () => {
      const g = gate();
      const target = randomUUID();
      await g.admit(target, 'j1');
      await g.admit(target, 'j2');
      clock += 4_000;
      // The jobs in flight have held their slots 4 s: each waiting job adds half of that (2 slots).
      const delays = [];
      for (let i = 0; i < 4; i++) delays.push(((await g.admit(target, `w${i}`)) as { delayMs: number }).delayMs);
      expect(delays).toEqual([2_000, 4_000, 6_000, 8_000]);
    });

    it('holds each target of one batch to its own limit (its delivery policy) where one is given, others to TARGET_MAX_IN_FLIGHT', async () => {
      const g = createTargetGate(redis, { queuePrefix: prefix, settings: SETTINGS, now: () => clock, random: () => 0.5 });
      const [strict, roomy, plain] = [randomUUID(), randomUUID(), randomUUID()];
      const jobs = (targetId: string, count: number, maxInFlight?: number) =>
        Array.from({ length: count }, (_, i) => ({ targetId, jobId: `${targetId}-${i}`, ...(maxInFlight === undefined ? {} : { maxInFlight }) }));
      const admissions = await g.admit([...jobs(strict, 2, 1), ...jobs(roomy, 5, 4), ...jobs(plain, 3)]);
      const admitted = (from: number, count: number) => admissions.slice(from, from + count).map((a) => a.admitted);
      expect(admitted(0, 2)).toEqual([true, false]);
      expect(admitted(2, 5)).toEqual([true, true, true, true, false]);
      expect(admitted(7, 3)).toEqual([true, true, false]);
      expect(admissions[1]).toMatchObject({ reason: 'target_busy' });
      expect(await readTargetHealth(redis, prefix, strict, clock)).toMatchObject({ inFlight: 1, deferred: 1 });

      // A limit raised since: the next batch that names it lets more in.
      expect((await g.admit([{ targetId: strict, jobId: 'later', maxInFlight: 2 }]))[0]).toMatchObject({ admitted: true });
    });

    it("grants leases within the target's own limit, shared between the workers", async () => {
      const g = createTargetGate(redis, { queuePrefix: prefix, settings: { ...SETTINGS, maxInFlight: 16 }, now: () => clock, random: () => 0.5 });
      const target = randomUUID();
      const lease = async (holder: string, want: number, keep = 0) =>
        (await g.settle([], [], [{ targetId: target, holder, keep, want, since: 0, maxInFlight: 3 }])).grants[0]!;
      expect(await lease('w1', 8)).toMatchObject({ held: 3, free: true });
      expect(await lease('w2', 8)).toMatchObject({ held: 0, free: true, contended: true });
      expect((await g.admit([{ targetId: target, jobId: 'one-by-one', maxInFlight: 3 }]))[0]).toMatchObject({ admitted: false, reason: 'target_busy' });
      // w1 keeps the slot its job runs in and gives the rest back; w2 gets its equal share of the 3.
      expect(await lease('w1', 8, 1)).toMatchObject({ held: 1 });
      expect(await lease('w2', 8)).toMatchObject({ held: 1 });
      expect(await readTargetHealth(redis, prefix, target, clock)).toMatchObject({ inFlight: 2 });
    });

    it('lets a target with a rate in at that rate: a job over it is deferred as rate_limited until a token is back, and no lease is granted', async () => {
      const g = createTargetGate(redis, { queuePrefix: prefix, settings: { ...SETTINGS, maxInFlight: 16 }, now: () => clock, random: () => 0.5 });
      const target = randomUUID();
      const admit = async (jobId: string) => (await g.admit([{ targetId: target, jobId, maxRatePerSecond: 2 }]))[0]!;
      // One token at most (a tenth of a second's worth, 1 at least), one more every 500 ms.
      expect(await admit('j1')).toEqual({ admitted: true, probe: false });
      expect(await admit('j2')).toEqual({ admitted: false, reason: 'rate_limited', delayMs: 500 });
      // Its turn comes after the one deferred before it: two tokens away.
      expect(await admit('j3')).toEqual({ admitted: false, reason: 'rate_limited', delayMs: 1_000 });
      clock += 500;
      expect(await admit('j2')).toMatchObject({ admitted: true });
      expect(await admit('j3')).toMatchObject({ admitted: false, reason: 'rate_limited' });
      clock += 500;
      expect(await admit('j3')).toMatchObject({ admitted: true });
      // Job by job: a lease would let jobs in without a token.
      expect((await g.settle([], [], [{ targetId: target, holder: 'w1', keep: 0, want: 4, since: 0, maxRatePerSecond: 2 }])).grants[0]).toMatchObject({
        held: 0,
        free: false,
      });
      // A batch that does not name the rate (no worker knows it yet) lets the target's jobs in as before.
      expect((await g.admit([{ targetId: target, jobId: 'j4' }]))[0]).toMatchObject({ admitted: true });
    });

    it('lets every job in when TARGET_MAX_IN_FLIGHT is 0', async () => {
      const g = gate({ maxInFlight: 0 });
      const target = randomUUID();
      for (let i = 0; i < 50; i++) expect(await g.admit(target, `j${i}`)).toMatchObject({ admitted: true });
    });
  });

  describe('flow control', () => {
    it('halves a target’s in-flight window when its receiver pushes back, once per slot time, and grows it back with successes', async () => {
      const g = gate({ maxInFlight: 8 });
      const target = randomUUID();
      for (let i = 1; i <= 8; i++) expect(await g.admit(target, `j${i}`)).toMatchObject({ admitted: true });
      expect((await g.health(target)).window).toBeNull();
      // A 429: the window is 4, and the 7 jobs still in flight are over it.
      expect(await g.release(target, 'j1', 'throttled')).toBeUndefined();
      expect((await g.health(target)).window).toBe(4);
      expect(await g.admit(target, 'k1')).toMatchObject({ admitted: false, reason: 'target_busy' });
      // The other jobs in flight answer 429 too, within the same slot time: no news, no further cut.
      expect(await g.release(target, 'j2', 'throttled')).toBeUndefined();
      expect((await g.health(target)).window).toBe(4);
      // Another after the slot time halves it again.
      clock += 1_000;
      await g.release(target, 'j3', 'throttled');
      expect((await g.health(target)).window).toBe(2);
      for (const job of ['j4', 'j5', 'j6', 'j7']) await g.release(target, job, 'success');
      // 2 + 1/2 + 1/2.5 + 1/2.9 + 1/3.24: back to 3.
      expect((await g.health(target)).window).toBe(3);
      await g.release(target, 'j8', 'success');
      expect(await g.admit(target, 'k1')).toMatchObject({ admitted: true });
      // Successes bring it back to the target's own limit, and the window is gone.
      for (let i = 0; i < 40; i++) await g.successes(target, 1);
      expect((await g.health(target)).window).toBeNull();
    });
  });

  describe('circuit breaker', () => {
    it("pauses the whole target for its receiver's Retry-After: open until then, its jobs deferred, then one probe", async () => {
      const g = gate();
      const target = randomUUID();
      await g.admit(target, 'j1');
      expect(await g.pause(target, 'j1', 5_000)).toBe('opened');
      expect(await g.health(target)).toMatchObject({
        breaker: { state: 'open', halfOpenAt: new Date(clock + 5_000).toISOString() },
        pausedUntil: new Date(clock + 5_000).toISOString(),
      });
      const deferred = (await g.admit(target, 'j2')) as { admitted: false; reason: string; delayMs: number };
      expect(deferred).toMatchObject({ admitted: false, reason: 'breaker_open' });
      expect(deferred.delayMs).toBeGreaterThanOrEqual(5_000);
      clock += 4_000;
      expect(await g.admit(target, 'j2')).toMatchObject({ admitted: false, reason: 'breaker_open' });
      clock += 1_000;
      expect(await g.admit(target, 'j2')).toEqual({ admitted: true, probe: true });
      expect((await g.health(target)).pausedUntil).toBeNull();
      expect(await g.release(target, 'j2', 'success')).toBe('closed');
      expect(await g.admit(target, 'j3')).toEqual({ admitted: true, probe: false });
    });

    it('keeps an open period longer than the pause asked for', async () => {
      const g = gate();
      const target = randomUUID();
      for (let i = 0; i < 3; i++) await attempt(g, target, 'failure');
      const { halfOpenAt } = (await g.health(target)).breaker;
      await g.admit(target, 'late');
      expect(await g.pause(target, 'late', 1_000)).toBeUndefined();
      expect((await g.health(target)).breaker.halfOpenAt).toBe(halfOpenAt);
    });

    it('opens after TARGET_BREAKER_FAILURES failures in a row; an answer in between starts the count again', async () => {
      const g = gate();
      const target = randomUUID();
      expect(await attempt(g, target, 'failure')).toBeUndefined();
      expect(await attempt(g, target, 'failure')).toBeUndefined();
      expect((await g.health(target)).breaker).toMatchObject({ state: 'closed', consecutiveFailures: 2 });
      expect(await attempt(g, target, 'answer')).toBeUndefined();
      expect(await attempt(g, target, 'failure')).toBeUndefined();
      expect(await attempt(g, target, 'failure')).toBeUndefined();
      expect(await attempt(g, target, 'failure')).toBe('opened');
      expect((await g.health(target)).breaker).toEqual({
        state: 'open',
        consecutiveFailures: 0,
        openedAt: new Date(clock).toISOString(),
        halfOpenAt: new Date(clock + 30_000).toISOString(),
        probeInFlight: false,
      });
    });

    it('opens on the failure ratio over the window once it holds TARGET_BREAKER_MIN_REQUESTS', async () => {
      const g = gate({ breaker: { failures: 0, ratio: 0.5, minRequests: 4, windowMs: 100_000 } });
      const target = randomUUID();
      expect(await attempt(g, target, 'failure')).toBeUndefined();
      expect(await attempt(g, target, 'success')).toBeUndefined();
      expect(await attempt(g, target, 'success')).toBeUndefined();
      // 2 of 4 failed.
      expect(await attempt(g, target, 'failure')).toBe('opened');
    });

    it('forgets requests older than the window for the ratio', async () => {
      const g = gate({ breaker: { failures: 0, ratio: 0.5, minRequests: 4, windowMs: 100_000 } });
      const target = randomUUID();
      for (let i = 0; i < 3; i++) await attempt(g, target, 'failure');
      clock += 150_000;
      expect(await attempt(g, target, 'success')).toBeUndefined();
      expect(await attempt(g, target, 'failure')).toBeUndefined();
      expect(await attempt(g, target, 'success')).toBeUndefined();
      expect(await attempt(g, target, 'failure')).toBe('opened');
    });

    it('defers every job while open, spread over the open period after its half-open time, and counts neutral ends nowhere', async () => {
      const g = gate();
      const target = randomUUID();
      await attempt(g, target, 'neutral');
      for (let i = 0; i < 3; i++) await attempt(g, target, 'failure');
      clock += 10_000;
      // Half-opens in 20 s; random 0.5 puts the job in the middle of the next 30 s.
      expect(await g.admit(target, 'later')).toEqual({ admitted: false, reason: 'breaker_open', delayMs: 20_000 + 15_000 });
      expect((await g.health(target)).deferred).toBe(1);
    });

    it('half-opens after TARGET_BREAKER_OPEN_SECONDS: one probe at a time, the others deferred', async () => {
      const g = gate();
      const target = randomUUID();
      for (let i = 0; i < 3; i++) await attempt(g, target, 'failure');
      clock += 30_000;
      expect((await g.health(target)).breaker.state).toBe('half_open');
      expect(await g.admit(target, 'probe')).toEqual({ admitted: true, probe: true });
      expect((await g.health(target)).breaker).toMatchObject({ state: 'half_open', probeInFlight: true });
      expect(await g.admit(target, 'other')).toMatchObject({ admitted: false, reason: 'breaker_open' });
    });

    // Any HTTP answer closes it: the breaker guards worker slots against endpoints that do not
    // answer; one answering 500 promptly holds no slot, and the retry policy deals with it.
    it.each(['success', 'answer'] as const)('closes when the probe ends in %s (an HTTP answer)', async (verdict) => {
      const g = gate();
      const target = randomUUID();
      for (let i = 0; i < 3; i++) await attempt(g, target, 'failure');
      clock += 30_000;
      await g.admit(target, 'probe');
      expect(await g.release(target, 'probe', verdict)).toBe('closed');
      expect((await g.health(target)).breaker).toEqual({ state: 'closed', consecutiveFailures: 0, openedAt: null, halfOpenAt: null, probeInFlight: false });
      expect(await g.admit(target, 'next')).toEqual({ admitted: true, probe: false });
    });

    it('re-opens for twice as long (up to the longest open time) when the probe gets no answer', async () => {
      const verdict = 'failure';
      const g = gate();
      const target = randomUUID();
      for (let i = 0; i < 3; i++) await attempt(g, target, 'failure');
      const halfOpenAfter: number[] = [];
      for (let round = 0; round < 3; round++) {
        clock += 200_000;
        await g.admit(target, `probe${round}`);
        expect(await g.release(target, `probe${round}`, verdict)).toBe('reopened');
        halfOpenAfter.push(Date.parse((await g.health(target)).breaker.halfOpenAt!) - clock);
      }
      expect(halfOpenAfter).toEqual([60_000, 100_000, 100_000]);
    });

    it('lets the next job probe when the probe ended without a verdict, or its lease ran out', async () => {
      const g = gate();
      const target = randomUUID();
      for (let i = 0; i < 3; i++) await attempt(g, target, 'failure');
      clock += 30_000;
      await g.admit(target, 'p1');
      expect(await g.release(target, 'p1', 'neutral')).toBeUndefined();
      expect(await g.admit(target, 'p2')).toEqual({ admitted: true, probe: true });
      clock += SETTINGS.leaseMs + 1;
      expect(await g.admit(target, 'p3')).toEqual({ admitted: true, probe: true });
      // The first probe's late verdict changes nothing: p3 decides.
      expect(await g.release(target, 'p2', 'success')).toBeUndefined();
      expect(await g.release(target, 'p3', 'success')).toBe('closed');
    });

    it('counts the breakers open and half-open, not one series per target', async () => {
      const g = gate();
      const [a, b] = [randomUUID(), randomUUID()];
      for (let i = 0; i < 3; i++) await attempt(g, a, 'failure');
      clock += 20_000;
      for (let i = 0; i < 3; i++) await attempt(g, b, 'failure');
      clock += 15_000;
      expect(await countBreakers(redis, prefix, clock)).toEqual({ open: 1, half_open: 1 });
    });
  });
});

describe('leases', () => {
  it('grant a worker all the slots it wants while the target has room for them; they count against the others', async () => {
    const g = gate({ maxInFlight: 3 });
    const target = randomUUID();
    await g.admit(target, 'j1');
    expect(await g.lease(target, 'w1', 0, 2)).toEqual({ held: 2, free: true });
    expect(await g.health(target)).toMatchObject({ inFlight: 3 });
    expect(await g.admit(target, 'j2')).toMatchObject({ admitted: false, reason: 'target_busy' });
    expect(await g.lease(target, 'w2', 0, 1)).toEqual({ held: 0, free: true, contended: true });
    // Given back down to the slot in use: the job that waits gets in, the next does not.
    expect(await g.lease(target, 'w1', 1, 1)).toEqual({ held: 1, free: true });
    expect(await g.admit(target, 'j2')).toMatchObject({ admitted: true });
    expect(await g.admit(target, 'j3')).toMatchObject({ admitted: false });
    expect(await g.lease(target, 'w1', 0, 0)).toEqual({ held: 0, free: true });
    expect(await g.health(target)).toMatchObject({ inFlight: 2 });
  });

  it('grant as many of the slots a worker wants as the limit leaves room for, and keep the slots its jobs run in', async () => {
    const g = gate({ maxInFlight: 2 });
    const target = randomUUID();
    expect(await g.lease(target, 'w1', 0, 2)).toEqual({ held: 2, free: true });
    // The worker's own slots are not counted twice; more than the limit is not granted.
    expect(await g.lease(target, 'w1', 2, 2)).toEqual({ held: 2, free: true });
    expect(await g.lease(target, 'w1', 2, 6)).toEqual({ held: 2, free: true, contended: true });
    expect(await g.health(target)).toMatchObject({ inFlight: 2 });
    expect(await g.lease(target, 'w1', 0, 0)).toEqual({ held: 0, free: true });
    await g.admit(target, 'j1');
    expect(await g.lease(target, 'w1', 0, 2)).toEqual({ held: 1, free: true, contended: true });
    expect(await g.lease(target, 'w2', 0, 2)).toEqual({ held: 0, free: true, contended: true });
    expect(await g.health(target)).toMatchObject({ inFlight: 2 });
  });

  it('share the slots equally between workers that want more than the limit, and leave a worker what the others do not want', async () => {
    const g = gate({ maxInFlight: 5 });
    const target = randomUUID();
    await g.admit(target, 'j1');
    expect(await g.lease(target, 'w1', 0, 4)).toEqual({ held: 4, free: true });
    // No room: its want is recorded, the target is contended, and w1 gives back what it holds over
    // its share (2 of the 4 slots not taken by a job let in one by one) once its jobs no longer run in them.
    expect(await g.lease(target, 'w2', 0, 4)).toEqual({ held: 0, free: true, contended: true });
    expect(await g.lease(target, 'w1', 3, 4)).toEqual({ held: 3, free: true, contended: true });
    expect(await g.lease(target, 'w1', 1, 4)).toEqual({ held: 2, free: true, contended: true });
    expect(await g.lease(target, 'w2', 0, 4)).toEqual({ held: 2, free: true, contended: true });
    expect(await g.health(target)).toMatchObject({ inFlight: 5 });
    // w2 wants one slot only: w1 may take the rest.
    expect(await g.lease(target, 'w2', 0, 1)).toEqual({ held: 1, free: true, contended: true });
    expect(await g.lease(target, 'w1', 2, 4)).toEqual({ held: 3, free: true, contended: true });
    // A worker that wants nothing more is forgotten, and leaves the others all the room: no longer contended.
    expect(await g.lease(target, 'w2', 0, 0)).toEqual({ held: 0, free: true });
    expect(await g.lease(target, 'w1', 3, 4)).toEqual({ held: 4, free: true });
    expect(await g.health(target)).toMatchObject({ inFlight: 5 });
  });

  it('grant no more slots while the breaker is not closed, and say so; the probe still goes job by job', async () => {
    const g = gate();
    const target = randomUUID();
    expect(await g.lease(target, 'w1', 0, 1)).toEqual({ held: 1, free: true });
    for (let i = 0; i < 3; i++) await attempt(g, target, 'failure');
    expect(await g.lease(target, 'w1', 1, 2)).toEqual({ held: 1, free: false });
    expect(await g.lease(target, 'w1', 0, 2)).toEqual({ held: 0, free: false });
    clock += 30_000;
    expect(await g.lease(target, 'w1', 0, 2)).toEqual({ held: 0, free: false });
    expect(await g.admit(target, 'probe')).toEqual({ admitted: true, probe: true });
    await g.release(target, 'probe', 'success');
    expect(await g.lease(target, 'w1', 0, 2)).toEqual({ held: 2, free: true });
  });

  it('lose their slots when their ttl passes without a renewal (a worker that died)', async () => {
    const g = gate();
    const target = randomUUID();
    await g.lease(target, 'w1', 0, 2);
    clock += 9_000;
    expect(await g.admit(target, 'j1')).toMatchObject({ admitted: false, reason: 'target_busy' });
    // Renewed: the slots in use stay for another ttl.
    expect(await g.lease(target, 'w1', 2, 2)).toEqual({ held: 2, free: true });
    clock += 9_000;
    expect(await g.admit(target, 'j1')).toMatchObject({ admitted: false, reason: 'target_busy' });
    clock += 1_001;
    expect(await g.admit(target, 'j1')).toMatchObject({ admitted: true });
    expect(await g.health(target)).toMatchObject({ inFlight: 1 });
  });

  it('count how long their oldest job has run in how long a slot is held, which spaces a busy target’s deferrals', async () => {
    const g = gate();
    const [fresh, hanging] = [randomUUID(), randomUUID()];
    await g.lease(fresh, 'w1', 0, 2, 0);
    await g.lease(hanging, 'w1', 0, 2, clock - 10_000);
    // No history: the shortest delay; the hanging one: 1 waiting ÷ 2 slots × 10 s.
    expect(await g.admit(fresh, 'j1')).toEqual({ admitted: false, reason: 'target_busy', delayMs: 100 });
    expect(await g.admit(hanging, 'j1')).toEqual({ admitted: false, reason: 'target_busy', delayMs: 5_000 });
  });

  it('count their oldest job at its age when they were last renewed, so that a worker that died does not make it grow', async () => {
    const g = gate();
    const target = randomUUID();
    // w1's oldest job had run 100 ms when it last renewed; a second later it may be long done.
    await g.lease(target, 'w1', 0, 2, clock - 100);
    clock += 1_000;
    const delays = (await g.admitMany(target, 4)).map((a) => a.delayMs);
    // Each waiting job adds half of 100 ms (2 slots), within the shortest delay, 100 ms.
    expect(delays).toEqual([100, 100, 150, 200]);
  });

  it('of a worker that stopped renewing (died) keep their slots until their ttl, and the deferrals come back when those free', async () => {
    const g = gate();
    const target = randomUUID();
    // w1's lease takes the whole limit with a job running in it, then w1 dies: no more renewals.
    await g.lease(target, 'w1', 0, 2, clock);
    clock += 4_000;
    // The slots free in 6 s (the 10 s ttl): 100 waiting jobs come back then, not spread as if
    // each slot were held 4 s by a job still running (up to the longest delay, 30 s).
    const admissions = await g.admitMany(target, 100);
    expect(new Set(admissions.map((a) => a.delayMs))).toEqual(new Set([6_000]));
  });

  it('of a worker that stopped renewing count nothing of what it wanted in the shares', async () => {
    const g = gate({ maxInFlight: 4 });
    const target = randomUUID();
    // w1 wants 4 slots but gets the 1 that jobs let in one by one leave; then it dies.
    for (const job of ['j1', 'j2', 'j3']) await g.admit(target, job);
    expect(await g.lease(target, 'w1', 0, 4)).toEqual({ held: 1, free: true, contended: true });
    for (const job of ['j1', 'j2', 'j3']) await g.release(target, job, 'success');
    clock += 4_000;
    // w1 holds 1 slot until its ttl passes, but a live worker no longer shares with it.
    expect(await g.lease(target, 'w2', 0, 4)).toEqual({ held: 3, free: true });
  });

  it('count a run of successes sent together as that many requests in the breaker’s window', async () => {
    const g = gate({ breaker: { failures: 0, ratio: 0.5, minRequests: 8, windowMs: 100_000 } });
    const target = randomUUID();
    expect(await g.successes(target, 4)).toBeUndefined();
    for (let i = 0; i < 3; i++) expect(await attempt(g, target, 'failure')).toBeUndefined();
    // 4 of 8 failed.
    expect(await attempt(g, target, 'failure')).toBe('opened');
  });

  it('end a run of failures with a run of successes', async () => {
    const g = gate();
    const target = randomUUID();
    await attempt(g, target, 'failure');
    await attempt(g, target, 'failure');
    await g.successes(target, 3);
    expect((await g.health(target)).breaker.consecutiveFailures).toBe(0);
  });
});

describe('batches', () => {
  // The script reads each target's state once per batch and writes it back once: a batch must
  // answer, and leave in Redis, exactly what the same calls sent one per call (releases first,
  // then leases, then admissions) do.
  it('answers and stores what the same releases, leases and admissions sent one per call do', async () => {
    const settings: TargetGateSettings = {
      maxInFlight: 3,
      leaseMs: 20_000,
      breaker: { failures: 3, ratio: 0.5, windowMs: 10_000, minRequests: 4, openMs: 2_000, openMaxMs: 8_000 },
    };
    const onePerCall = `${prefix}:one`;
    const batched = `${prefix}:batch`;
    const gateOf = (queuePrefix: string) => createTargetGate(redis, { queuePrefix, settings, now: () => clock, random: () => 0.5 });
    const [single, batch] = [gateOf(onePerCall), gateOf(batched)];
    const targets = [randomUUID(), randomUUID(), randomUUID()];
    // A fixed pseudo-random sequence, so that a failure shows the same workload every time.
    let seed = 20_261_123;
    const next = (n: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    const verdicts: GateVerdict[] = ['success', 'success', 'success', 'failure', 'failure', 'answer', 'neutral'];
    const inFlight: Array<{ targetId: string; jobId: string }> = [];
    const waiting: Array<{ targetId: string; jobId: string }> = [];
    let jobs = 0;
    let admittedTotal = 0;
    let deferredTotal = 0;
    const changesSeen = new Set<string | undefined>();
    // Slots each worker's lease holds, by holder and target.
    const held = new Map<string, number>();
    let [leasesGranted, leasesRefused, returnedTotal] = [0, 0, 0];

    for (let round = 0; round < 150; round++) {
      clock += next(3_000);
      const releases = inFlight
        .splice(0, next(inFlight.length + 1))
        .map((job) => ({ ...job, verdict: verdicts[next(verdicts.length)]!, durationMs: next(2_000), times: 1 + next(3) }));
      const leases = Array.from({ length: next(3) }, () => {
        const [holder, targetId] = [`w${next(2)}`, targets[next(targets.length)]!];
        const now = held.get(`${holder}/${targetId}`) ?? 0;
        const keep = next(now + 1);
        // Deferred jobs of the target that came back into the worker's leased slots.
        const back = waiting.filter((job) => job.targetId === targetId).slice(0, next(3));
        for (const job of back) waiting.splice(waiting.indexOf(job), 1);
        returnedTotal += back.length;
        return { targetId, holder, keep, want: keep + next(3), since: next(2) === 0 ? 0 : clock - next(5_000), returned: back.map((job) => job.jobId) };
      });
      // One lease per worker and target in a batch, as a worker sends them.
      const unique = leases.filter((lease, i) => leases.findIndex((l) => l.holder === lease.holder && l.targetId === lease.targetId) === i);
      const entries = [...waiting.splice(0, next(waiting.length + 1))];
      for (let i = next(6); i > 0; i--) entries.push({ targetId: targets[next(targets.length)]!, jobId: `job-${jobs++}` });
      // Now and then a job let in again while it holds its slot (its worker died, another took it).
      if (inFlight.length > 0 && next(5) === 0) entries.push(inFlight[next(inFlight.length)]!);

      const one = { changes: [] as unknown[], grants: [] as unknown[], admissions: [] as unknown[] };
      for (const release of releases) one.changes.push(...(await single.settle([release], [])).changes);
      for (const lease of unique) one.grants.push(...(await single.settle([], [], [lease])).grants);
      for (const entry of entries) one.admissions.push(...(await single.settle([], [entry])).admissions);
      const together = await batch.settle(releases, entries, unique);
      together.grants.forEach((grant, i) => {
        const lease = unique[i]!;
        held.set(`${lease.holder}/${lease.targetId}`, grant.held);
        if (grant.free && grant.held > 0) leasesGranted += 1;
        if (!grant.free) leasesRefused += 1;
      });
      expect({ round, ...together }).toEqual({ round, ...one });

      for (const change of together.changes) changesSeen.add(change);
      together.admissions.forEach((admission, i) => {
        const entry = entries[i]!;
        if (admission.admitted) {
          admittedTotal += 1;
          if (!inFlight.includes(entry)) inFlight.push(entry);
        } else {
          deferredTotal += 1;
          waiting.push(entry);
        }
      });
      for (const targetId of targets) {
        const state = async (queuePrefix: string) => {
          const keys = targetKeys(queuePrefix, targetId);
          return {
            inflight: await redis.zrange(keys.inflight, '0', '-1', 'WITHSCORES'),
            leased: await redis.hgetall(keys.leased),
            wanted: await redis.hgetall(keys.wanted),
            deferred: await redis.zrange(keys.deferred, '0', '-1', 'WITHSCORES'),
            breaker: await redis.hgetall(keys.breaker),
            window: await redis.hgetall(keys.window),
            // Expiry set or not (the two runs' real times differ by a few ms).
            expires: await Promise.all(Object.values(keys).map(async (key) => Math.sign(await redis.pttl(key)))),
          };
        };
        expect({ round, targetId, ...(await state(batched)) }).toEqual({ round, targetId, ...(await state(onePerCall)) });
      }
      expect(await redis.zrange(`${batched}:gate:breakers`, '0', '-1', 'WITHSCORES')).toEqual(
        await redis.zrange(`${onePerCall}:gate:breakers`, '0', '-1', 'WITHSCORES'),
      );
    }
    // The workload went through every path: slots full, breakers opening, re-opening and closing.
    expect(admittedTotal).toBeGreaterThan(100);
    expect(deferredTotal).toBeGreaterThan(50);
    expect(leasesGranted).toBeGreaterThan(5);
    expect(leasesRefused).toBeGreaterThan(10);
    expect(returnedTotal).toBeGreaterThan(10);
    expect([...changesSeen].sort()).toEqual(['closed', 'opened', 'reopened', undefined]);
  });
});

describe('the gate’s script (commands/gate.lua)', () => {
  it('averages slot times with the same decay as the workers’ leases (target-gate.ts SLOT_TIME_DECAY)', () => {
    expect(GATE_SCRIPT).toMatch(new RegExp(`^local slotTimeDecay = ${SLOT_TIME_DECAY}$`, 'm'));
  });

  it('is one text with its includes in place', () => {
    expect(GATE_SCRIPT).not.toMatch(/@include/);
    expect(GATE_SCRIPT).toMatch(/^local function release\(/m);
    expect(GATE_SCRIPT).toMatch(/^local function grant\(/m);
  });
});
