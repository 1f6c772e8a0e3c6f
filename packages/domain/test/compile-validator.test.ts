import { addressSchema, compileValidator } from '../src';
import { expectAccepted, expectRejectedAt } from './support/expectations';

describe('compileValidator', () => {
  const validate = compileValidator<{ label: string; address: unknown }>({
    $id: 'herald:test/labelled-address',
    type: 'object',
    additionalProperties: false,
    required: ['label', 'address'],
    properties: { label: { type: 'string', format: 'email' }, address: { $ref: addressSchema.$id } },
  });

  const address = { addressLine1: 'a', number: '1', city: 'c', postCode: 'p', countryCode: 'DE' };

  it('compiles a schema that references a domain schema by its $id', () => {
    const input = { label: 'ops@example.com', address };
    expectAccepted(validate(input), input);
  });

  it('applies the referenced rules with pointers into the input', () => {
    const input = { label: 'ops@example.com', address: { ...address, countryCode: 'US' } };
    expectRejectedAt(validate(input), '/address/state');
  });

  it('accepts the one-of-two-required pattern of request bodies', () => {
    const oneOfTwo = compileValidator<unknown>({
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'string' } },
      oneOf: [{ required: ['a'] }, { required: ['b'] }],
    });
    expect(oneOfTwo({ a: 'x' }).ok).toBe(true);
    expect(oneOfTwo({ a: 'x', b: 'y' }).ok).toBe(false);
  });

  it('refuses U+0000 and unpaired surrogates anywhere, property names included, which PostgreSQL cannot store', () => {
    const free = compileValidator<unknown>({ type: 'object' });
    const result = free({ a: 'x\u0000', b: [{ c: 'ok', 'd\u0000': 1 }], e: '\ud800', f: 'paired \ud83d\ude00 is fine' });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.violations.map((v) => v.pointer).sort()).toEqual(['/a', '/b/0/d\u0000', '/e']);
    expect(result.violations.every((v) => v.keyword === 'unstorableText')).toBe(true);
  });

  it('reports unstorable text beside the schema violations of the same input', () => {
    const result = validate({ label: 'not-an-email\u0000', address });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.violations.map((v) => v.keyword).sort()).toEqual(['format', 'unstorableText']);
  });

  it('refuses a schema with an unknown keyword at once', () => {
    expect(() => compileValidator<unknown>({ type: 'string', maxLenght: 3 })).toThrow(/unknown keyword/);
  });
});

describe('compileValidator with anyOf', () => {
  const validate = compileValidator<unknown>({
    type: 'object',
    properties: { a: { type: 'string' }, b: { type: 'string' } },
    anyOf: [{ required: ['a'] }, { required: ['b'] }],
  });

  it('keeps the anyOf violation of alternatives that are not "or null"', () => {
    const result = validate({});
    expect(result.ok ? [] : result.violations.map((v) => `${v.pointer} ${v.keyword}`)).toEqual(['/a required', '/b required', ' anyOf']);
  });
});
