import { examplePaymentSeriesEvent, type IngestEvent, validateEvent } from '../../src';

/** A minimal producer event for a non-payment-series object, without id and createdAt. */
export function validIngestEvent(): IngestEvent {
  return {
    programId: 'program_1',
    merchantId: 'merchant-1',
    origin: 'automated',
    eventType: 'billing.scheduled',
    objectId: 'sub-42',
    objectType: 'subscription',
    data: [{ anything: 'goes', nested: { deep: [1, 2] } }],
  };
}

const REMOVE = Symbol('remove');

/** Pass as a value to `withChanges` to delete the field. */
export const remove = REMOVE;

/**
 * A deep copy of `value` with each field named by a JSON pointer set to its new value, or deleted
 * when the value is `remove`. The parents of each field must exist.
 */
export function withChanges(value: unknown, changes: Record<string, unknown>): unknown {
  const copy: unknown = structuredClone(value);
  for (const [pointer, replacement] of Object.entries(changes)) {
    const tokens = pointer.split('/').slice(1);
    const last = tokens.pop();
    if (last === undefined) throw new Error('withChanges needs non-root pointers');
    let parent = copy as Record<string, unknown>;
    for (const token of tokens) parent = parent[token] as Record<string, unknown>;
    if (replacement === REMOVE) delete parent[last];
    else parent[last] = replacement;
  }
  return copy;
}

/** A string of `length` characters. */
export function text(length: number): string {
  return 'x'.repeat(length);
}

/** The example payment-series event with `changes` applied (see `withChanges`), and what validateEvent says of it. */
export function checkEventWith(changes: Record<string, unknown>) {
  const input = withChanges(examplePaymentSeriesEvent(), changes);
  return { input, result: validateEvent(input) };
}
