import { randomBytes } from 'node:crypto';

/** A fresh name for tenants, queue prefixes and databases, so tests never depend on order. */
export function uniqueId(prefix = 't'): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}
