import type { Violation } from '@herald/domain';

/**
 * The spec leaves the shape of some data free; PostgreSQL refuses very deep JSON (and deep
 * recursion is a cheap attack), so free content is bounded in depth. Returns the violation at the
 * first place that goes deeper than `maxDepth`, or none.
 */
export function depthViolations(value: unknown, maxDepth: number, pointer = ''): Violation[] {
  if (value === null || typeof value !== 'object') return [];
  if (maxDepth === 0) return [{ pointer, keyword: 'maxDepth', message: 'is nested too deeply' }];
  const entries = Array.isArray(value) ? value.map((item, i) => [String(i), item] as const) : Object.entries(value);
  for (const [key, item] of entries) {
    const found = depthViolations(item, maxDepth - 1, `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`);
    if (found.length > 0) return found;
  }
  return [];
}
