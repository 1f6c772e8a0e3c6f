/**
 * Why a callback's job was sent back to wait without a POST and without spending an attempt:
 * its target's circuit breaker is open (`breaker_open`), or its target already has
 * TARGET_MAX_IN_FLIGHT callbacks in flight (`target_busy`). The target gate decides it, the
 * deliveries row stores it, the metrics count by it.
 */
export const DEFERRAL_REASONS = ['breaker_open', 'target_busy'] as const;
export type DeferralReason = (typeof DEFERRAL_REASONS)[number];
