import { pointerTo, type Violation } from './violation';

/** Deepest an event's content may nest, the event object itself counting 1. Deeper than any payment series (event > data > item > address > field is 5) with room to spare. */
export const MAX_JSON_DEPTH = 32;
/**
 * The spec leaves the shape of some data free; PostgreSQL refuses very deep JSON (and deep
 * recursion is a cheap attack), so free content is bounded in depth. Returns the violation at the
 * first place that goes deeper than `maxDepth`, or none.
 */
export function depthViolations(value: unknown, maxDepth: number, pointer = ''): Violation[] {
  // The keys down to where the walk stands; a pointer is written only for the violation.
  const keys: string[] = [];
  const tooDeep = (item: unknown, depthLeft: number): boolean => {
    if (item === null || typeof item !== 'object') return false;
    if (depthLeft === 0) return true;
    for (const key of Object.keys(item)) {
      keys.push(key);
      if (tooDeep((item as Record<string, unknown>)[key], depthLeft - 1)) return true;
      keys.pop();
    }
    return false;
  };
  return tooDeep(value, maxDepth) ? [{ pointer: pointerTo(keys, pointer), keyword: 'maxDepth', message: 'is nested too deeply' }] : [];
}
