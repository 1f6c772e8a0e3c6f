import { compareStrings, parseDateTime, isUuid, secretMatcher, TimeoutError, UUID_PATTERN, withTimeout } from '../src';

describe('isUuid', () => {
  it('accepts a UUID in lower or upper case', () => {
    expect(isUuid('0b7f5c1e-3d2a-4c8b-9f10-aa55cc33ee77')).toBe(true);
    expect(isUuid('0B7F5C1E-3D2A-4C8B-9F10-AA55CC33EE77')).toBe(true);
  });

  it('refuses anything else, including a UUID with text around it', () => {
    for (const value of [
      '',
      'nope',
      '0b7f5c1e3d2a4c8b9f10aa55cc33ee77',
      ' 0b7f5c1e-3d2a-4c8b-9f10-aa55cc33ee77',
      '0b7f5c1e-3d2a-4c8b-9f10-aa55cc33ee77x',
      '0b7f5c1e-3d2a-4c8b-9f10-aa55cc33ee7g',
    ]) {
      expect(isUuid(value)).toBe(false);
    }
  });

  it('matches what UUID_PATTERN matches, so a schema and a lookup agree', () => {
    expect(new RegExp(UUID_PATTERN).test('0b7f5c1e-3d2a-4c8b-9f10-aa55cc33ee77')).toBe(true);
    expect(new RegExp(UUID_PATTERN).test('Event-0b7f5c1e-3d2a-4c8b-9f10-aa55cc33ee77')).toBe(false);
  });
});

describe('compareStrings', () => {
  it('orders by code unit, whatever the locale (upper case before lower case)', () => {
    expect(['b', 'a', 'B', 'aa', ''].sort(compareStrings)).toEqual(['', 'B', 'a', 'aa', 'b']);
    expect(compareStrings('x', 'x')).toBe(0);
  });
});

describe('secretMatcher', () => {
  it('accepts only the expected secret, whatever the length of the one given', () => {
    const matches = secretMatcher('s3cret-token');
    expect(matches('s3cret-token')).toBe(true);
    expect(matches('s3cret-toke')).toBe(false);
    expect(matches('s3cret-token-and-more')).toBe(false);
    expect(matches('')).toBe(false);
  });
});

describe('withTimeout', () => {
  it('passes the value of work that settles in time', async () => {
    await expect(withTimeout(Promise.resolve(42), 1_000, 'too slow')).resolves.toBe(42);
  });

  it('passes the rejection of work that fails in time', async () => {
    await expect(withTimeout(Promise.reject(new Error('boom')), 1_000, 'too slow')).rejects.toThrow('boom');
  });

  it('rejects with a TimeoutError carrying the message when the work takes longer', async () => {
    const never = new Promise<never>(() => undefined);
    const error = await withTimeout(never, 20, 'the check did not answer').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ name: 'TimeoutError', code: 'timed_out', message: 'the check did not answer' });
  });
});

describe('parseDateTime', () => {
  it('reads an RFC 3339 date-time with any offset as its instant', () => {
    expect(parseDateTime('2026-06-30T23:59:59+02:00')?.toISOString()).toBe('2026-06-30T21:59:59.000Z');
    expect(parseDateTime('0001-01-01T00:00:00Z')?.toISOString()).toBe('0001-01-01T00:00:00.000Z');
    expect(parseDateTime('9999-12-31T23:59:59.999Z')?.toISOString()).toBe('9999-12-31T23:59:59.999Z');
  });

  it('refuses what is not RFC 3339, a leap second, and years outside 0001-9999 once the offset is applied', () => {
    for (const value of [
      'yesterday',
      '2026-06-30',
      '2026-02-30T00:00:00Z',
      '2026-06-30T23:59:60Z',
      '0000-01-01T00:00:00Z',
      '0001-01-01T00:00:00+00:01',
      '9999-12-31T23:59:59-23:59',
    ]) {
      expect(parseDateTime(value)).toBeUndefined();
    }
  });
});
