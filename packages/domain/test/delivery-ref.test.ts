import { storedAtOf } from '../src';

describe("a job's storedAt", () => {
  it('is the time it names, to the millisecond', () => {
    expect(storedAtOf({ storedAt: '2026-11-24T10:00:00.123Z' })).toEqual(new Date('2026-11-24T10:00:00.123Z'));
  });

  it('is unknown when absent or not a time (a job queued without it, or edited by hand): the worker then reads every partition', () => {
    expect(storedAtOf({})).toBeUndefined();
    expect(storedAtOf({ storedAt: 'yesterday-ish' })).toBeUndefined();
    expect(storedAtOf({ storedAt: '' })).toBeUndefined();
  });
});
