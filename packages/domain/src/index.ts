/**
 * @herald/domain: the resources of the notification and event spec as JSON Schemas (the single
 * source of every field rule), the TypeScript types derived from them, ajv validators, the
 * domain errors, and the few pure helpers every package needs (UUID pattern, string order,
 * constant-time secret check, time bound). No I/O.
 */
export { parseDateTime, toDate } from './date-time';
export type { FromSchema } from './from-schema';
export { addressSchema } from './schemas/address';
export { EVENT_TYPES, eventSchema, OBJECT_TYPES, ORIGINS } from './schemas/event';
export { eventPageSchema, PAGE_ENVELOPE } from './schemas/event-page';
export { INGEST_BATCH_MAX_EVENTS, ingestBatchSchema, ingestEventSchema, TENANT_ID_PATTERN } from './schemas/ingest';
export { DOMAIN_SCHEMAS } from './schemas/registry';
export type {
  Address,
  Consumer,
  Event,
  EventPage,
  EventType,
  IngestBatch,
  IngestEvent,
  OAuthTokenResponse,
  ObjectType,
  PaymentSeries,
  PaymentSeriesEvent,
} from './types';
export {
  compileValidator,
  validateEvent,
  validateEventPage,
  validateIngestBatch,
  validateIngestEvent,
  validateOAuthTokenResponse,
  validatePaymentSeries,
  type Validator,
} from './validation';
export { depthViolations, MAX_JSON_DEPTH } from './validation';
export { pointerTo, VIOLATION_HINT } from './violation';
export type { Validation, Violation } from './violation';
export { examplePaymentSeriesEvent } from './examples/payment-series-event';
export { decideAttempt, type AttemptDecision, type AttemptFacts } from './attempt-decision';
export { EventConflictError } from './errors/event-conflict-error';
export { HeraldError } from './errors/herald-error';
export { NoTargetError } from './errors/no-target-error';
export { QueueUnavailableError } from './errors/queue-unavailable-error';
export { RecoveryRunningError } from './errors/recovery-running-error';
export { TargetSwitchedOffError } from './errors/target-switched-off-error';
export { TimeoutError } from './errors/timeout-error';
export { UnknownTenantError } from './errors/unknown-tenant-error';
export { storedAtOf, type DeliveryRef } from './delivery-ref';
export { targetsToNotify, type RoutedEvent, type RoutingTarget } from './routing';
export { ValidationError } from './errors/validation-error';
export { compareStrings } from './compare-strings';
export { secretMatcher } from './secret-matcher';
export { isUuid, UUID_PATTERN } from './uuid';
export { withTimeout } from './with-timeout';
export {
  CALLBACK_AUTH_MODES,
  MERCHANT_NOTIFICATION_OBJECT_TYPES,
  OAUTH_SCOPE_PATTERN,
  OAUTH_TOKEN_REQUESTS,
  TARGET_ORDERINGS,
  type CallbackAuthMode,
  type OAuthTokenRequest,
  type TargetOrdering,
} from './notifications';
export {
  isSigningSecret,
  newSigningSecret,
  previousSecretExpiry,
  rotatedSigningSecrets,
  signingSecretsInUse,
  signWebhook,
  standardWebhookHeaders,
  type SigningSecrets,
  type WebhookMessage,
} from './webhook-signature';
export { maskQueryValues } from './masked-url';
export {
  attemptChangesTargetHealth,
  AUTO_DISABLE_WARNING_AFTER_MS,
  AUTO_DISABLED_REASON,
  shouldAutoDisable,
  targetHealthAfter,
  targetOutlook,
  type StoredTargetHealth,
  type TargetAttemptOutcome,
  type TargetHealthSeen,
  type TargetOutlook,
} from './target-health';
export { targetSwitchState, type TargetSwitchState } from './target-switch';
export { DEFERRAL_REASONS, type DeferralReason } from './deferral-reason';
export {
  DELIVERY_POLICY_FIELDS,
  deliveryPolicySchema,
  effectiveDeliveryPolicy,
  MAX_DELIVERY_ATTEMPTS,
  MAX_POLICY_TIMEOUT_MS,
  resolveDeliveryPolicy,
  storedDeliveryPolicy,
  type DeliveryPolicy,
  type DeliveryPolicyDefaults,
  type EffectiveDeliveryPolicy,
  type ResolvedDeliveryPolicy,
} from './delivery-policy';
