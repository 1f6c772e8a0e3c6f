/**
 * Why a callback's job was sent back to wait without a POST and without spending an attempt:
 * its target's circuit breaker is open (`breaker_open`), its target already has its in-flight limit
 * (its policy's maxInFlight, or TARGET_MAX_IN_FLIGHT) of callbacks in flight (`target_busy`), its
 * target had its policy's maxRatePerSecond of callbacks this second (`rate_limited`), or its target
 * delivers each object's callbacks in order and an earlier callback of the same object has no final
 * outcome yet (`awaiting_predecessor`). The target gate decides the first three, the worker's
 * ordering step the fourth; the deliveries row stores it, the metrics count by it.
 */
export const DEFERRAL_REASONS = ['breaker_open', 'target_busy', 'rate_limited', 'awaiting_predecessor'] as const;
export type DeferralReason = (typeof DEFERRAL_REASONS)[number];
