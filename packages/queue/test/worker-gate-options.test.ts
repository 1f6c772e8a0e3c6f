// The worker gate's options: defaults applied first, a bad value rejected at once with its name.
import { resolveWorkerGateOptions, type WorkerGateOptions } from '../src/target-gate/worker-gate-options';

const REQUIRED: WorkerGateOptions = {
  queuePrefix: 'test',
  settings: { maxInFlight: 16, leaseMs: 60_000, breaker: { failures: 5, ratio: 0.7, windowMs: 300_000, minRequests: 10, openMs: 30_000, openMaxMs: 300_000 } },
  logger: { info() {}, warn() {} },
};

describe('the worker gate’s options', () => {
  it('take their defaults when left out or given as undefined', () => {
    const resolved = resolveWorkerGateOptions({ ...REQUIRED, leaseRenewMs: undefined });
    expect(resolved).toMatchObject({ leaseRenewMs: 200, leaseWaitMs: 20, releaseLingerMs: 5, maxBatch: 256, maxRunsInFlight: 2 });
    expect(resolved.holder).toMatch(/^.+:\d+:[0-9a-f]{8}$/);
  });

  it('give each gate a holder name of its own', () => {
    expect(resolveWorkerGateOptions(REQUIRED).holder).not.toBe(resolveWorkerGateOptions(REQUIRED).holder);
  });

  it('keep the values given', () => {
    expect(resolveWorkerGateOptions({ ...REQUIRED, leaseRenewMs: 50, releaseLingerMs: 0, maxBatch: 8, holder: 'w1' })).toMatchObject({
      leaseRenewMs: 50,
      releaseLingerMs: 0,
      maxBatch: 8,
      holder: 'w1',
    });
  });

  it.each([
    ['leaseRenewMs', 0],
    ['maxBatch', 0],
    ['maxRunsInFlight', Number.NaN],
    ['leaseWaitMs', -1],
    ['releaseLingerMs', -5],
  ] as const)('reject %s = %s, naming it', (name, value) => {
    expect(() => resolveWorkerGateOptions({ ...REQUIRED, [name]: value })).toThrow(new RegExp(`worker gate: ${name} must be`));
  });
});
