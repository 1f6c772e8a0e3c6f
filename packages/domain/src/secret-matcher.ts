import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * A check of given secrets against `expected`, in constant time: both sides are compared as
 * SHA-256 digests, so neither the length nor the content of the expected secret leaks.
 */
export function secretMatcher(expected: string): (given: string) => boolean {
  const expectedDigest = digest(expected);
  return (given) => timingSafeEqual(digest(given), expectedDigest);
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
