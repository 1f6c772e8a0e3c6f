/**
 * Why a callback's job was sent back to wait without a POST and without spending an attempt:
 * its target's circuit breaker is open (`breaker_open`), its target already has
 * TARGET_MAX_IN_FLIGHT callbacks in flight (`target_busy`), or its target delivers each object's
 * callbacks in order and an earlier callback of the same object has no final outcome yet
 * (`awaiting_predecessor`). The target gate decides the first two, the worker's ordering step the
 * third; the deliveries row stores it, the metrics count by it.
 */
export const DEFERRAL_REASONS = ['breaker_open', 'target_busy', 'awaiting_predecessor'] as const;
export type DeferralReason = (typeof DEFERRAL_REASONS)[number];
