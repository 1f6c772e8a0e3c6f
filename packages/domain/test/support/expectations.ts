import type { Validation } from '../../src';

/** Asserts that the input was accepted as it is. */
export function expectAccepted(result: Validation<unknown>, input: unknown): void {
  expect(result).toEqual({ ok: true, value: input });
}

/** Asserts that the input was rejected and that every violation names the field at `pointer`. */
export function expectRejectedAt(result: Validation<unknown>, pointer: string): void {
  const pointers = result.ok ? [] : [...new Set(result.violations.map((v) => v.pointer))];
  expect(pointers).toEqual([pointer]);
}
