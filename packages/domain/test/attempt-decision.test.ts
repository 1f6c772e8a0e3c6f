import { type AttemptFacts, decideAttempt } from '../src';

const HOUR = 3_600_000;
const startedAt = new Date('2026-11-27T12:00:00Z');
const healthy = { failingSince: null, lastSuccessAt: new Date(startedAt.getTime() - 1_000) };
const failingFor = (ms: number) => ({ failingSince: new Date(startedAt.getTime() - ms), lastSuccessAt: null });
const base: AttemptFacts = {
  delivered: false,
  errorKind: 'http_status',
  errorMessage: 'HTTP 500',
  retryable: true,
  startedAt,
  targetHealth: healthy,
  attemptsMade: 0,
  maxAttempts: 12,
  autoDisableAfterMs: 0,
};

describe('decideAttempt', () => {
  it('takes a 200 as delivered, and writes the health of a target only when it changes', () => {
    expect(decideAttempt({ ...base, delivered: true })).toEqual({ next: 'delivered', changesTargetHealth: false });
    expect(decideAttempt({ ...base, delivered: true, targetHealth: failingFor(1_000) })).toEqual({ next: 'delivered', changesTargetHealth: true });
  });

  it('retries a retryable failure before the last try, and starts a run of failures', () => {
    expect(decideAttempt(base)).toEqual({ next: 'retry', changesTargetHealth: true, errorMessage: 'HTTP 500' });
    expect(decideAttempt({ ...base, targetHealth: failingFor(1_000) })).toEqual({ next: 'retry', changesTargetHealth: false, errorMessage: 'HTTP 500' });
  });

  it('fails for good on the last try, or on a failure that says trying again cannot help', () => {
    expect(decideAttempt({ ...base, attemptsMade: 11 })).toMatchObject({ next: 'failed', why: 'attempts-used', disableTarget: false });
    expect(decideAttempt({ ...base, retryable: false })).toMatchObject({ next: 'failed', why: 'not-retryable', disableTarget: false });
  });

  it('switches off a target failing longer than the threshold, failing the delivery for good and saying why', () => {
    const decision = decideAttempt({ ...base, targetHealth: failingFor(2 * HOUR), autoDisableAfterMs: HOUR });
    expect(decision).toEqual({
      next: 'failed',
      why: 'not-retryable',
      disableTarget: true,
      changesTargetHealth: true,
      errorMessage: `HTTP 500; every attempt since ${failingFor(2 * HOUR).failingSince.toISOString()} failed, so the notification target is auto-disabled`,
    });
  });

  it.each([
    ['a run shorter than the threshold', { targetHealth: failingFor(HOUR - 1), autoDisableAfterMs: HOUR }],
    ['a threshold of 0', { targetHealth: failingFor(1_000 * HOUR) }],
    ["Herald's own failure", { errorKind: 'internal', targetHealth: failingFor(2 * HOUR), autoDisableAfterMs: HOUR }],
    ['a target already off', { errorKind: 'target_unavailable', targetHealth: failingFor(2 * HOUR), autoDisableAfterMs: HOUR }],
    ['no usable target', { targetHealth: undefined, autoDisableAfterMs: HOUR }],
  ] as Array<[string, Partial<AttemptFacts>]>)('never switches a target off for %s', (_case, facts) => {
    expect(decideAttempt({ ...base, ...facts })).toMatchObject({ next: 'retry' });
  });

  it('writes no health for an attempt without a usable target', () => {
    expect(decideAttempt({ ...base, targetHealth: undefined, retryable: false })).toMatchObject({ next: 'failed', changesTargetHealth: false });
  });
});
