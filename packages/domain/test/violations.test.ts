import {
  compileValidator,
  HeraldError,
  ORIGINS,
  VIOLATION_HINT,
  examplePaymentSeriesEvent,
  validateEvent,
  validateIngestEvent,
  validatePaymentSeries,
  ValidationError,
  type Violation,
} from '../src';
import { remove, validIngestEvent, withChanges } from './support/fixtures';

describe('violations', () => {
  it('name a missing property by its own pointer', () => {
    const result = validateEvent(withChanges(examplePaymentSeriesEvent(), { '/data/0/billingAddress/city': remove }));
    expect(result).toEqual({
      ok: false,
      violations: [{ pointer: '/data/0/billingAddress/city', message: 'is required', keyword: 'required' }],
    });
  });

  it('name an extra property by its own pointer', () => {
    const result = validateEvent({ ...examplePaymentSeriesEvent(), extra: 1 });
    expect(result).toEqual({
      ok: false,
      violations: [{ pointer: '/extra', message: 'is not an allowed property', keyword: 'additionalProperties' }],
    });
  });

  it('escape ~ and / in property names as JSON pointers do', () => {
    const result = validateIngestEvent({ ...validIngestEvent(), 'a/b~c': 1, metadata: { 'x/y': 2 } });
    expect(result.ok ? [] : result.violations.map((v) => v.pointer)).toEqual(['/a~1b~0c', '/metadata/x~1y']);
  });

  it('list every broken rule of an input at once', () => {
    const input = withChanges(examplePaymentSeriesEvent(), {
      '/origin': 'batch',
      '/data/0/currencyIsoCode': 'EUR1',
      '/data/0/consumer/gender': 'X',
    });
    const result = validateEvent(input);
    const found = result.ok ? [] : result.violations.map((v) => `${v.pointer} ${v.keyword}`);
    expect(found.sort()).toEqual(['/data/0/consumer/gender enum', '/data/0/currencyIsoCode maxLength', '/data/0/currencyIsoCode pattern', '/origin enum']);
  });

  it('say "must be object" and nothing about null for a nullable object of the wrong type', () => {
    const result = validateEvent(withChanges(examplePaymentSeriesEvent(), { '/data/0/consumer': 'Ada' }));
    expect(result).toEqual({
      ok: false,
      violations: [{ pointer: '/data/0/consumer', message: 'must be object', keyword: 'type' }],
    });
  });

  it('say "string or null" for a nullable string of the wrong type', () => {
    const result = validateEvent(withChanges(examplePaymentSeriesEvent(), { '/data/0/merchantMetadata': 1 }));
    expect(result).toEqual({
      ok: false,
      violations: [{ pointer: '/data/0/merchantMetadata', message: 'must be string or null', keyword: 'type' }],
    });
  });

  it('start at the root of the value that was validated', () => {
    const paymentSeries = withChanges(examplePaymentSeriesEvent().data?.[0], { '/billingAddress/state': remove });
    expect(validatePaymentSeries(paymentSeries)).toEqual({
      ok: false,
      violations: [{ pointer: '/billingAddress/state', message: 'is required', keyword: 'required' }],
    });
  });
});

describe('ValidationError', () => {
  const violations: Violation[] = Array.from({ length: 7 }, (_, i) => ({
    pointer: `/events/${i}/programId`,
    message: 'is required',
    keyword: 'required',
  }));

  it('carries the stable code validation_failed, its name and every violation', () => {
    const error = new ValidationError(violations);
    expect(error).toBeInstanceOf(HeraldError);
    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe('validation_failed');
    expect(error.name).toBe('ValidationError');
    expect(error.violations).toEqual(violations);
  });

  it('names the first five violations in its message and counts the rest', () => {
    expect(new ValidationError(violations).message).toBe(
      'Validation failed: /events/0/programId is required; /events/1/programId is required; ' +
        '/events/2/programId is required; /events/3/programId is required; /events/4/programId is required; and 2 more',
    );
  });

  it('shows the root of the value as /', () => {
    expect(new ValidationError([{ pointer: '', message: 'must be object', keyword: 'type' }]).message).toBe('Validation failed: / must be object');
  });
});

describe('violation messages', () => {
  it('list the allowed values of an enum', () => {
    const result = validateEvent(withChanges(examplePaymentSeriesEvent(), { '/origin': 'batch' }));
    expect(result).toEqual({
      ok: false,
      violations: [{ pointer: '/origin', message: `must be one of: ${ORIGINS.join(', ')}`, keyword: 'enum' }],
    });
  });

  it.each([
    ['page_size', 'pageSize'],
    ['PAGESIZE', 'pageSize'],
    ['page-size', 'pageSize'],
    ['orgin', 'origin'],
    ['eventTyp', 'eventType'],
  ])('suggest the closest known property for %s', (typed, meant) => {
    const validate = compileValidator({ type: 'object', additionalProperties: false, properties: { pageSize: {}, origin: {}, eventType: {} } });
    const result = validate({ [typed]: 1 });
    expect(result.ok ? [] : result.violations).toEqual([
      { pointer: `/${typed}`, message: `is not an allowed property (did you mean ${meant}?)`, keyword: 'additionalProperties' },
    ]);
  });

  it('suggest nothing for a property close to no known one', () => {
    const validate = compileValidator({ type: 'object', additionalProperties: false, properties: { pageSize: {}, origin: {} } });
    const result = validate({ colour: 1, page: 1 });
    expect(result.ok ? [] : result.violations.map((v) => v.message)).toEqual(['is not an allowed property', 'is not an allowed property']);
  });

  it('add the hint written next to the broken rule', () => {
    const validate = compileValidator({ type: 'array', items: { enum: ['a', 'b'], [VIOLATION_HINT]: 'Only letters are sent.' } });
    const result = validate(['a', 'c']);
    expect(result.ok ? [] : result.violations).toEqual([{ pointer: '/1', message: 'must be one of: a, b. Only letters are sent.', keyword: 'enum' }]);
  });
});
