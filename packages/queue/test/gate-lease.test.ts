// The worker's lease of a target's slots (worker-gate.ts createWorkerGate) on the real Redis: a
// healthy target's jobs go in without a script run each, the lease follows a breaker that other
// workers open, and its slots go back when the jobs stop coming or the worker closes.
import { randomUUID } from 'node:crypto';
import { waitFor } from '@herald/testing';
import { readTargetHealth, targetKeys } from '../src';
import { useWorkerGates } from './support/worker-gates';

const gates = useWorkerGates();
/** Counts the gate's script runs on the test's connection from now on. */
function countScriptRuns(): { runs: number } {
  const { redis } = gates;
  const connection = redis as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const run = connection['heraldGate']!;
  const counter = { runs: 0 };
  connection['heraldGate'] = (...args: unknown[]) => {
    counter.runs += 1;
    return run.apply(redis, args);
  };
  return counter;
}

const health = (targetId: string) => readTargetHealth(gates.redis, gates.queuePrefix, targetId);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const LET_IN = { admitted: true, probe: false };

/** Requests the breaker's window counts for the target now. */
async function requestsCounted(targetId: string): Promise<number> {
  const window = await gates.redis.hgetall(targetKeys(gates.queuePrefix, targetId).window);
  return Object.entries(window)
    .filter(([field]) => field.startsWith('n:'))
    .reduce((sum, [, value]) => sum + Number(value), 0);
}

describe('the worker’s lease of a target’s slots', () => {
  it('lets a healthy target’s jobs in with one script run for the lease, none per job, and tells the breaker of their successes at close', async () => {
    const g = gates.gate({}, { leaseRenewMs: 60_000 });
    const target = randomUUID();
    const scripts = countScriptRuns();
    for (let i = 0; i < 6; i++) {
      expect(await g.admit(target, `j${i}`)).toEqual({ admitted: true, probe: false });
      await g.release(target, `j${i}`, 'success', 5);
    }
    expect(scripts.runs).toBe(1);
    // The one slot the jobs took in turn stays the worker's.
    expect((await health(target)).inFlight).toBe(1);

    await g.close();
    expect((await health(target)).inFlight).toBe(0);
    expect(await requestsCounted(target)).toBe(6);
  });

  it('waits at close for a renewal already on its way, so that no slot stays taken after the worker is gone', async () => {
    const g = gates.gate({}, { leaseRenewMs: 60_000 });
    const target = randomUUID();
    // The renewal this job asks for is still waiting to be sent when close() starts.
    const admitted = g.admit(target, 'j1');
    await g.close();
    expect(await admitted).toMatchObject({ admitted: true });
    expect((await health(target)).inFlight).toBe(0);
  });

  it('holds no more slots than the limit: the jobs beyond it are deferred as target_busy', async () => {
    const [a, b] = [gates.gate({ TARGET_MAX_IN_FLIGHT: '2' }, { leaseRenewMs: 60_000 }), gates.gate({ TARGET_MAX_IN_FLIGHT: '2' }, { leaseRenewMs: 60_000 })];
    const target = randomUUID();
    const first = await Promise.all(['j1', 'j2', 'j3'].map((job) => a.admit(target, job)));
    expect(first.filter((admission) => admission.admitted)).toHaveLength(2);
    expect(first.filter((admission) => !admission.admitted)).toEqual([expect.objectContaining({ reason: 'target_busy' })]);
    expect(await b.admit(target, 'k1')).toMatchObject({ admitted: false, reason: 'target_busy' });
    expect((await health(target)).inFlight).toBe(2);
  });

  it('holds a target to the limit its policy set (setLimit), and gives back the slots over a lowered limit as their jobs end', async () => {
    const g = gates.gate({ TARGET_MAX_IN_FLIGHT: '16' }, { leaseRenewMs: 100 });
    const target = randomUUID();
    g.setLimit(target, { maxInFlight: 3, maxRatePerSecond: 0 });
    expect(g.knowsLimit(target)).toBe(true);
    const first = await Promise.all(['j1', 'j2', 'j3', 'j4'].map((job) => g.admit(target, job)));
    expect(first.map((admission) => admission.admitted)).toEqual([true, true, true, false]);
    expect((await health(target)).inFlight).toBe(3);

    // Lowered to 1 while three run: no job goes in until only one is left running, then none more.
    g.setLimit(target, { maxInFlight: 1, maxRatePerSecond: 0 });
    await g.release(target, 'j1', 'success', 5);
    expect(await g.admit(target, 'j5')).toMatchObject({ admitted: false, reason: 'target_busy' });
    await g.release(target, 'j2', 'success', 5);
    expect(await g.admit(target, 'j6')).toMatchObject({ admitted: false, reason: 'target_busy' });
    await g.release(target, 'j3', 'success', 5);
    expect(await g.admit(target, 'j7')).toEqual(LET_IN);
    expect(await g.admit(target, 'j8')).toMatchObject({ admitted: false, reason: 'target_busy' });
    await waitFor(
      async () => (await health(target)).inFlight,
      (n) => n === 1,
      5_000,
      'the lease to keep only the slot its job runs in',
    );
    await g.release(target, 'j7', 'success', 5);
  });

  it('lets a target with a rate in job by job, without a lease', async () => {
    const g = gates.gate({}, { leaseRenewMs: 60_000 });
    const target = randomUUID();
    g.setLimit(target, { maxInFlight: 16, maxRatePerSecond: 1 });
    const scripts = countScriptRuns();
    expect(await g.admit(target, 'j1')).toEqual(LET_IN);
    expect(await g.admit(target, 'j2')).toMatchObject({ admitted: false, reason: 'rate_limited' });
    expect(scripts.runs).toBe(2);
    await g.release(target, 'j1', 'success', 5);
  });

  it('stops letting jobs in at its next renewal once another worker’s failures opened the breaker', async () => {
    const env = { TARGET_BREAKER_FAILURES: '2' };
    const [a, b] = [gates.gate(env, { leaseRenewMs: 300 }), gates.gate(env, { leaseRenewMs: 300 })];
    const target = randomUUID();
    expect(await a.admit(target, 'j1')).toMatchObject({ admitted: true });
    await a.release(target, 'j1', 'success', 5);
    await Promise.all(['k1', 'k2'].map((job) => b.admit(target, job)));
    await Promise.all(['k1', 'k2'].map((job) => b.release(target, job, 'failure', 5)));
    await waitFor(
      () => health(target),
      (h) => h.breaker.state === 'open',
      2_000,
      'the breaker to open',
    );
    // Worker a's lease runs out (300 ms) and its renewal learns that the breaker is open.
    await sleep(400);
    expect(await a.admit(target, 'j2')).toMatchObject({ admitted: false, reason: 'breaker_open' });
  });

  it('sends the next job of a target to ask the gate after a failure, so that a breaker the failure opened stops it', async () => {
    const g = gates.gate({ TARGET_BREAKER_FAILURES: '2' }, { leaseRenewMs: 60_000 });
    const target = randomUUID();
    // One after the other, so that both run in leased slots (their releases are only verdicts).
    await g.admit(target, 'j1');
    await g.admit(target, 'j2');
    expect((await health(target)).inFlight).toBe(2);
    await g.release(target, 'j1', 'failure', 5);
    await g.release(target, 'j2', 'failure', 5);
    // The lease would still be good for a minute: the failures make the next job ask.
    expect(await g.admit(target, 'j3')).toMatchObject({ admitted: false, reason: 'breaker_open' });
  });

  it('gives the slots back once the target’s jobs stop coming, and keeps those its jobs still run in', async () => {
    const g = gates.gate({}, { leaseRenewMs: 100 });
    const [quiet, busy] = [randomUUID(), randomUUID()];
    await g.admit(quiet, 'j1');
    await g.release(quiet, 'j1', 'success', 5);
    await g.admit(busy, 'k1');
    await waitFor(
      () => health(quiet),
      (h) => h.inFlight === 0,
      2_000,
      'the quiet target’s slot to go back',
    );
    await sleep(300);
    expect((await health(busy)).inFlight).toBe(1);
    await g.release(busy, 'k1', 'success', 5);
    await waitFor(
      () => health(busy),
      (h) => h.inFlight === 0,
      2_000,
      'the busy target’s slot to go back',
    );
    expect(await requestsCounted(busy)).toBe(1);
  });

  /**
   * A lease at the limit (2) whose jobs hold a slot `slotMs` each: a job finds no slot free within
   * the wait and is deferred; then what becomes of the next job, whose lease slot frees right after
   * it asks.
   */
  async function admitBeyondFullLease(slotMs: number) {
    const g = gates.gate({ TARGET_MAX_IN_FLIGHT: '2' }, { leaseRenewMs: 60_000 });
    const target = randomUUID();
    await g.admit(target, 'j1');
    await g.admit(target, 'j2');
    await g.release(target, 'j1', 'success', slotMs);
    expect(await g.admit(target, 'j3')).toEqual(LET_IN);
    expect(await g.admit(target, 'j4')).toMatchObject({ admitted: false, reason: 'target_busy' });
    const admission = g.admit(target, 'j5');
    await g.release(target, 'j2', 'success', slotMs);
    return { admission: await admission, inFlight: (await health(target)).inFlight };
  }

  it('lets a job beyond its lease wait for one of the lease’s slots when they free within a few ms, instead of deferring it', async () => {
    expect(await admitBeyondFullLease(5)).toEqual({ admission: LET_IN, inFlight: 2 });
  });

  it('defers at once a job beyond its lease when the lease’s slots free slowly, so that a slow target’s jobs hold no worker slot', async () => {
    const { admission } = await admitBeyondFullLease(3_000);
    expect(admission).toMatchObject({ admitted: false, reason: 'target_busy' });
  });

  it('no longer counts a deferred job among its target’s deferred jobs once it came back into a leased slot', async () => {
    const g = gates.gate({ TARGET_MAX_IN_FLIGHT: '2' }, { leaseRenewMs: 100 });
    const target = randomUUID();
    await g.admit(target, 'j1');
    await g.admit(target, 'j2');
    expect(await g.admit(target, 'j3')).toMatchObject({ admitted: false, reason: 'target_busy' });
    expect((await health(target)).deferred).toBe(1);
    await g.release(target, 'j1', 'success', 5);
    // j3 comes back (deferred before) and takes the slot j1 left, with no script run of its own:
    // the lease's next renewal tells the gate.
    expect(await g.admit(target, 'j3', true)).toEqual(LET_IN);
    await waitFor(
      async () => (await health(target)).deferred,
      (deferred) => deferred === 0,
      2_000,
      'no deferred job left',
    );
  });

  it('shares a busy target’s slots between workers: the one over its share gives slots back as its jobs end, and the other’s jobs get them', async () => {
    const env = { TARGET_MAX_IN_FLIGHT: '4' };
    const [a, b] = [gates.gate(env, { leaseRenewMs: 100 }), gates.gate(env, { leaseRenewMs: 100 })];
    const target = randomUUID();
    for (const job of ['a1', 'a2', 'a3', 'a4']) expect(await a.admit(target, job)).toEqual(LET_IN);
    // No slot is left: b's job is deferred, and the slot b asked for is recorded.
    expect(await b.admit(target, 'b1')).toMatchObject({ admitted: false, reason: 'target_busy' });
    await a.release(target, 'a1', 'success', 5);
    await a.release(target, 'a2', 'success', 5);
    // a's next renewal keeps its share (3, as b asks for 1), and a job of b gets the slot a gave back.
    let n = 1;
    await waitFor(
      () => b.admit(target, `b${++n}`),
      (admission) => admission.admitted,
      2_000,
      'a slot for b',
    );
    const leased = await gates.redis.hgetall(targetKeys(gates.queuePrefix, target).leased);
    expect(Object.values(leased).map((lease) => Number(lease.split(':')[0]))).toContain(3);
    expect((await health(target)).inFlight).toBe(4);
  });
});
