import { ValidationError } from '@herald/domain';
import { recoveryInputOf } from '../src/portal/recovery-form';

/** The violations recoveryInputOf throws for `form`, as pointer and message. */
function violationsOf(form: Record<string, unknown>): Array<{ pointer: string; message: string }> {
  try {
    recoveryInputOf(form);
  } catch (error) {
    if (error instanceof ValidationError) return error.violations.map(({ pointer, message }) => ({ pointer, message }));
    throw error;
  }
  throw new Error('no ValidationError');
}

describe('the recovery form’s fields', () => {
  it('reads datetime-local values as UTC, with or without seconds, and leaves an empty `to` out', () => {
    expect(recoveryInputOf({ from: '2026-11-28T09:30', to: '' })).toEqual({ from: '2026-11-28T09:30:00Z' });
    expect(recoveryInputOf({ from: ' 2026-11-28T09:30:15 ', to: '2026-11-28T10:00:00.250' })).toEqual({
      from: '2026-11-28T09:30:15Z',
      to: '2026-11-28T10:00:00.250Z',
    });
  });

  it('names each field that is missing, repeated or not a date and time', () => {
    expect(violationsOf({})).toEqual([{ pointer: '/from', message: 'is required: the date and time (UTC) the recovery starts at' }]);
    expect(violationsOf({ from: ['2026-11-28T09:30', '2026-11-28T09:31'] })[0]?.pointer).toBe('/from');
    expect(violationsOf({ from: '2026-11-28T09:30Z', to: '2026-02-30T10:00' }).map((v) => v.pointer)).toEqual(['/from', '/to']);
    expect(violationsOf({ from: '28/11/2026 09:30' })[0]?.message).toMatch(/^must be a date and time in UTC, as YYYY-MM-DDTHH:MM/);
  });
});
