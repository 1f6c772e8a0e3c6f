/**
 * Orders strings by UTF-16 code units, as `<` does: the same order on every machine and locale
 * (unlike `localeCompare`), for sorts whose result is hashed, stored or used to order row locks.
 */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
