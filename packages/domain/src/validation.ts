import Ajv2020, { type ErrorObject } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { closestName } from './closest-name';
import { VIOLATION_HINT } from './violation';
import { DATE_TIME_RULE, parseDateTime } from './date-time';
import { eventSchema } from './schemas/event';
import { eventPageSchema } from './schemas/event-page';
import { ingestBatchSchema, ingestEventSchema } from './schemas/ingest';
import { oauthTokenResponseSchema } from './schemas/oauth-token-response';
import { paymentSeriesSchema } from './schemas/payment-series';
import { DOMAIN_SCHEMAS } from './schemas/registry';
import type { Event, EventPage, IngestBatch, IngestEvent, OAuthTokenResponse, PaymentSeries } from './types';
import { pointerTo, type Validation, type Violation } from './violation';

// strict: a typo in a schema keyword fails at start-up instead of silently validating nothing.
// strictRequired is off because it refuses the common `oneOf: [{ required: ['a'] }, { required: ['b'] }]`
// (the property is defined one level up). allErrors: a producer learns every problem at once.
// verbose: each error carries the schema it broke, so an unknown property can be matched against the
// known ones and a hint written next to a rule can be shown (see messageOf).
const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false, verbose: true });
addFormats(ajv, ['date', 'email']);
// RFC 3339 and an instant Herald can store and write back: one check for every schema's date-time.
ajv.addFormat('date-time', { type: 'string', validate: (value: string) => parseDateTime(value) !== undefined });
ajv.addKeyword({ keyword: VIOLATION_HINT, schemaType: 'string' });
ajv.addSchema([...DOMAIN_SCHEMAS]);

/** A function that checks unknown input against one schema. */
export type Validator<T> = (input: unknown) => Validation<T>;

/**
 * Compiles a JSON Schema with the domain's settings (draft 2020-12, strict, all errors, formats
 * date-time, date and email) into a Validator; it may `$ref` the domain schemas by `$id`. `T` is
 * what a valid input is typed as: keep it in step with the schema. Compile once, at module load.
 */
export function compileValidator<T>(schema: object): Validator<T> {
  const validate = ajv.compile(schema);
  return (input) => {
    const violations = validate(input) ? [] : toViolations(validate.errors ?? []);
    violations.push(...unstorableTextViolations(input));
    return violations.length === 0 ? { ok: true, value: input as T } : { ok: false, violations };
  };
}

// PostgreSQL stores neither U+0000 (in text or jsonb) nor a lone UTF-16 surrogate (in jsonb):
// either would fail the INSERT and turn a producer's bad input into a 500. JSON Schema cannot say
// "no such character anywhere, keys included", so every validator checks it here.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finds U+0000 on purpose, a character PostgreSQL cannot store
const UNSTORABLE_CHARACTER = /[\u0000\p{Cs}]/u;

/** A violation for every string or property name in `input` that PostgreSQL could not store. */
function unstorableTextViolations(input: unknown): Violation[] {
  const violations: Violation[] = [];
  // Iterative: the input may be nested far deeper than the call stack allows. Each value keeps the
  // way to it, and its pointer is written only for a violation.
  const pending: Reached[] = [{ value: input, key: '', parent: undefined }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value } = next;
    if (typeof value === 'string') {
      if (UNSTORABLE_CHARACTER.test(value)) violations.push(unstorableText(next));
    } else if (value !== null && typeof value === 'object') {
      for (const key of Object.keys(value)) {
        const item: Reached = { value: (value as Record<string, unknown>)[key], key, parent: next };
        if (UNSTORABLE_CHARACTER.test(key)) violations.push(unstorableText(item));
        pending.push(item);
      }
    }
  }
  return violations;
}

/** A value of the input, its key in its parent, and the parent (none for the input itself). */
interface Reached {
  value: unknown;
  key: string;
  parent: Reached | undefined;
}

function pointerOfReached(reached: Reached): string {
  const keys: string[] = [];
  for (let at: Reached = reached; at.parent !== undefined; at = at.parent) keys.push(at.key);
  return pointerTo(keys.reverse());
}

function unstorableText(reached: Reached): Violation {
  return { pointer: pointerOfReached(reached), keyword: 'unstorableText', message: 'must not contain U+0000 or an unpaired UTF-16 surrogate' };
}

/** Checks an Event (as stored and listed). */
export const validateEvent: Validator<Event> = compileValidator(eventSchema);
/** Checks a Payment Series on its own (pointers start at its root). */
export const validatePaymentSeries: Validator<PaymentSeries> = compileValidator(paymentSeriesSchema);
/** Checks one event of the internal producer API. */
export const validateIngestEvent: Validator<IngestEvent> = compileValidator(ingestEventSchema);
/** Checks a batch body of the internal producer API. */
export const validateIngestBatch: Validator<IngestBatch> = compileValidator(ingestBatchSchema);
/** Checks a GET /events page envelope. */
export const validateEventPage: Validator<EventPage> = compileValidator(eventPageSchema);
/** Checks the token response of a merchant's Authentication URL. */
export const validateOAuthTokenResponse: Validator<OAuthTokenResponse> = compileValidator(oauthTokenResponseSchema);

// Schema path of the `{ type: 'null' }` branch of an anyOf, as `nullable()` writes it; $1 is the anyOf.
const NULL_BRANCH = /(\/anyOf)\/\d+\/type$/;

/** Turns ajv's errors into violations that each name the offending field, without ajv's bookkeeping noise. */
function toViolations(errors: readonly ErrorObject[]): Violation[] {
  const nullBranches = errors.filter(isNullBranchError);
  const nullableAnyOfs = new Set(nullBranches.map((e) => `${e.instancePath} ${e.schemaPath.replace(NULL_BRANCH, '$1')}`));
  const seen = new Set<string>();
  const violations: Violation[] = [];
  for (const error of errors) {
    // Summaries that always come with the detailed errors: `if` ("must match then schema") with those
    // of its `then`; a nullable field's `anyOf` with those of its non-null branch, next to which
    // "must be null" only misleads.
    if (error.keyword === 'if' || isNullBranchError(error)) continue;
    if (error.keyword === 'anyOf' && nullableAnyOfs.has(`${error.instancePath} ${error.schemaPath}`)) continue;
    const violation = { pointer: pointerOf(error), message: messageOf(error), keyword: error.keyword };
    // A rule applied twice (e.g. data items as objects and as Payment Series) reports once.
    const key = `${violation.pointer}\u0000${violation.keyword}\u0000${violation.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    violations.push(violation);
  }
  return violations;
}

function isNullBranchError(error: ErrorObject): boolean {
  return error.keyword === 'type' && error.params['type'] === 'null' && NULL_BRANCH.test(error.schemaPath);
}

// ajv reports a missing or an extra property at its parent; the violation names the property itself.
function pointerOf(error: ErrorObject): string {
  if (error.keyword === 'required') return pointerTo([error.params['missingProperty']], error.instancePath);
  if (error.keyword === 'additionalProperties') return pointerTo([error.params['additionalProperty']], error.instancePath);
  return error.instancePath;
}

function messageOf(error: ErrorObject): string {
  const hint: unknown = error.parentSchema?.[VIOLATION_HINT];
  const message = ruleMessageOf(error);
  return typeof hint === 'string' ? `${message}. ${hint}` : message;
}

function ruleMessageOf(error: ErrorObject): string {
  if (error.keyword === 'required') return 'is required';
  if (error.keyword === 'additionalProperties') {
    const known = Object.keys((error.parentSchema?.['properties'] as object | undefined) ?? {});
    const suggestion = closestName(String(error.params['additionalProperty']), known);
    return suggestion === undefined ? 'is not an allowed property' : `is not an allowed property (did you mean ${suggestion}?)`;
  }
  // ajv writes a nullable field's type as "must be string,null".
  if (error.keyword === 'type') return `must be ${String(error.params['type']).split(',').join(' or ')}`;
  // ajv's own "must be equal to one of the allowed values" leaves the reader to find them.
  if (error.keyword === 'enum') return `must be one of: ${(error.params['allowedValues'] as unknown[]).map(String).join(', ')}`;
  if (error.keyword === 'format' && error.params['format'] === 'date-time') return DATE_TIME_RULE;
  return error.message ?? 'is invalid';
}

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
