import { VIOLATION_HINT } from './violation';

/**
 * A notification target's delivery policy: how its callbacks are retried, how long each may take,
 * how many may be in flight at once. An admin sets any of the fields on the target; a field left
 * out takes the global default from the settings (DELIVERY_ATTEMPTS, DELIVERY_BACKOFF_MAX_MS,
 * CALLBACK_TIMEOUT_MS, TARGET_MAX_IN_FLIGHT). The worker reads the target's policy at each
 * attempt, so a change applies to the next attempt of jobs already queued.
 */
export interface DeliveryPolicy {
  /** Tries of a callback in all, the first included. */
  attempts?: number;
  /** Longest wait between two tries, ms: the doubling from DELIVERY_BACKOFF_MS stops there. */
  maxBackoffMs?: number;
  /** Longest one callback POST may take, ms. */
  timeoutMs?: number;
  /** Most callbacks of the target in flight at once, across every worker process. */
  maxInFlight?: number;
  /** Most callbacks of the target per second, across every worker process; absent: no rate limit. */
  maxRatePerSecond?: number;
}

/** The names of a policy's fields, in the order views show them. */
export const DELIVERY_POLICY_FIELDS = ['attempts', 'maxBackoffMs', 'timeoutMs', 'maxInFlight', 'maxRatePerSecond'] as const;
export type DeliveryPolicyField = (typeof DELIVERY_POLICY_FIELDS)[number];
/** The fields with a global setting for their default (the rate has none: no limit). */
type DefaultedField = Exclude<DeliveryPolicyField, 'maxRatePerSecond'>;

/**
 * The range of each field. attempts: DELIVERY_ATTEMPTS's own range, so that every delivery job can
 * be enqueued with the most (MAX_DELIVERY_ATTEMPTS) and the policy decides when to stop.
 * maxBackoffMs: 1 s to DELIVERY_BACKOFF_MAX_MS's 7 days. timeoutMs: 100 ms to 60 s; the worker's
 * gate lease is sized for the longest (see the delivery-worker's gate lease). maxInFlight: 1 to 256,
 * a receiver's worth of connections; a target with no limit of its own follows TARGET_MAX_IN_FLIGHT.
 * maxRatePerSecond: 0.1 (one callback every 10 s) to 1000, not a whole number necessarily.
 */
const DELIVERY_POLICY_LIMITS: Readonly<Record<DeliveryPolicyField, { readonly min: number; readonly max: number }>> = Object.freeze({
  attempts: Object.freeze({ min: 1, max: 100 }),
  maxBackoffMs: Object.freeze({ min: 1_000, max: 7 * 86_400_000 }),
  timeoutMs: Object.freeze({ min: 100, max: 60_000 }),
  maxInFlight: Object.freeze({ min: 1, max: 256 }),
  maxRatePerSecond: Object.freeze({ min: 0.1, max: 1_000 }),
});

/** The attempts every delivery job is enqueued with: the policy, read at each attempt, ends it sooner. */
export const MAX_DELIVERY_ATTEMPTS = DELIVERY_POLICY_LIMITS.attempts.max;

/** The longest callback time limit a policy may set, which the gate's slot lease must outlast. */
export const MAX_POLICY_TIMEOUT_MS = DELIVERY_POLICY_LIMITS.timeoutMs.max;

const field = (name: DeliveryPolicyField, description: string) => {
  const { min, max } = DELIVERY_POLICY_LIMITS[name];
  return {
    type: name === 'maxRatePerSecond' ? 'number' : 'integer',
    minimum: min,
    maximum: max,
    description: `${description} ${min} to ${max}.`,
    [VIOLATION_HINT]: `Allowed: ${min} to ${max}`,
  } as const;
};

/** Whether a field holds a whole number (every one but the rate). */
const isWhole = (name: DeliveryPolicyField): boolean => name !== 'maxRatePerSecond';

/**
 * The JSON Schema of a target's `delivery` member (PUT), the one source of the fields' rules.
 * Every field is optional: one left out follows its global default.
 */
export const deliveryPolicySchema = {
  type: 'object',
  additionalProperties: false,
  description:
    "The target's delivery policy. A field left out follows its global default (DELIVERY_ATTEMPTS, DELIVERY_BACKOFF_MAX_MS, " +
    'CALLBACK_TIMEOUT_MS, TARGET_MAX_IN_FLIGHT; no rate limit); a change applies to the next attempt of callbacks already queued.',
  properties: {
    attempts: field('attempts', 'Tries of a callback in all, the first included.'),
    maxBackoffMs: field('maxBackoffMs', 'Longest wait between two tries, ms (the waits double from DELIVERY_BACKOFF_MS up to it).'),
    timeoutMs: field('timeoutMs', 'Longest one callback POST may take, ms.'),
    maxInFlight: field('maxInFlight', 'Most callbacks of the target in flight at once, across every worker.'),
    maxRatePerSecond: field('maxRatePerSecond', 'Most callbacks of the target per second, across every worker; absent: no rate limit.'),
  },
} as const;

/** The global defaults a policy's missing fields take (maxInFlight 0: no limit, as TARGET_MAX_IN_FLIGHT=0 says). */
export type DeliveryPolicyDefaults = Readonly<Record<DefaultedField, number>>;

/** Every field's value in force: the target's own, or the global default (maxRatePerSecond 0: no rate limit). */
export type ResolvedDeliveryPolicy = Readonly<Record<DeliveryPolicyField, number>>;

/** A field's value in force and where it comes from: set on the target, or the global default. */
export interface EffectiveValue {
  /** null: no limit (a rate no one set). */
  readonly value: number | null;
  readonly source: 'target' | 'default';
}

/** The policy as admins see it: each field's value in force, and where it comes from. */
export type EffectiveDeliveryPolicy = Readonly<Record<DeliveryPolicyField, EffectiveValue>>;

/** The values in force: the target's own fields over the defaults. */
export function resolveDeliveryPolicy(own: DeliveryPolicy, defaults: DeliveryPolicyDefaults): ResolvedDeliveryPolicy {
  return {
    attempts: own.attempts ?? defaults.attempts,
    maxBackoffMs: own.maxBackoffMs ?? defaults.maxBackoffMs,
    timeoutMs: own.timeoutMs ?? defaults.timeoutMs,
    maxInFlight: own.maxInFlight ?? defaults.maxInFlight,
    maxRatePerSecond: own.maxRatePerSecond ?? 0,
  };
}

/** The values in force with their sources, for the admin view. */
export function effectiveDeliveryPolicy(own: DeliveryPolicy, defaults: DeliveryPolicyDefaults): EffectiveDeliveryPolicy {
  const entry = (name: DeliveryPolicyField): EffectiveValue => {
    const value = own[name];
    if (value !== undefined) return { value, source: 'target' };
    return { value: name === 'maxRatePerSecond' ? null : defaults[name], source: 'default' };
  };
  return {
    attempts: entry('attempts'),
    maxBackoffMs: entry('maxBackoffMs'),
    timeoutMs: entry('timeoutMs'),
    maxInFlight: entry('maxInFlight'),
    maxRatePerSecond: entry('maxRatePerSecond'),
  };
}

/**
 * A stored policy read back (a JSON column): the known fields that hold whole numbers in range;
 * anything else (a field a later version added, a value out of today's range) is left to the
 * default rather than failing the target's callbacks.
 */
export function storedDeliveryPolicy(stored: unknown): DeliveryPolicy {
  if (stored === null || typeof stored !== 'object') return {};
  const policy: DeliveryPolicy = {};
  for (const name of DELIVERY_POLICY_FIELDS) {
    const value = (stored as Record<string, unknown>)[name];
    const { min, max } = DELIVERY_POLICY_LIMITS[name];
    if (typeof value === 'number' && (isWhole(name) ? Number.isInteger(value) : Number.isFinite(value)) && value >= min && value <= max) policy[name] = value;
  }
  return policy;
}
