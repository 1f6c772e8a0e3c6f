/**
 * Why a callback's job was sent back to wait without a POST and without spending an attempt:
 * its target's circuit breaker is open (`breaker_open`), its target already has its in-flight limit
 * (its policy's maxInFlight, or TARGET_MAX_IN_FLIGHT) of callbacks in flight (`target_busy`), or
 * its target had its policy's maxRatePerSecond of callbacks this second (`rate_limited`). The
 * target gate decides it, the deliveries row stores it, the metrics count by it.
 */
export const DEFERRAL_REASONS = ['breaker_open', 'target_busy', 'rate_limited'] as const;
export type DeferralReason = (typeof DEFERRAL_REASONS)[number];
