/** One broken rule: which field, what is wrong, and which schema keyword caught it. */
export interface Violation {
  /** JSON pointer (RFC 6901) of the offending field, e.g. `/data/0/billingAddress/state`; `''` is the whole value. */
  readonly pointer: string;
  /** What is wrong, for people (e.g. `must NOT have more than 50 characters`). */
  readonly message: string;
  /** The JSON Schema keyword that failed (`required`, `maxLength`, `pattern`, ...). */
  readonly keyword: string;
}

/** The typed value when the input is valid, else every violation found. */
export type Validation<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly violations: Violation[] };

/** The JSON Pointer (RFC 6901) of the member or item reached through `keys`, from `base`. */
export function pointerTo(keys: readonly string[], base = ''): string {
  return base + keys.map((key) => `/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

/**
 * Schema annotation: a sentence added to the message of any rule of that (sub)schema that is broken,
 * to say why the rule is there or how to comply (an `x-` name, so OpenAPI tools accept it too). Here,
 * not beside the validator: schemas that mention it (a target's delivery policy) are also read by
 * the delivery-worker, which must not load ajv.
 */
export const VIOLATION_HINT = 'x-violation-hint';
