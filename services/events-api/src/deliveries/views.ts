import type { DeliveryAttemptRecord, DeliveryDetail, DeliveryRecord, DeliverySummary } from '@herald/db';
import { maskQueryValues } from '@herald/domain';
import { redactForeignText } from '@herald/logging';

// Free text the worker stored from the outside world: its error messages and the first bytes of
// the merchant's answer, which an echoing endpoint may fill with the request's own Authorization
// header. The log redaction rules apply to it before an admin sees it.
function scrub(text: string | null): string | null {
  return text === null ? null : redactForeignText(text);
}

/**
 * Times the delivery's job was sent back to wait without a POST (its target's circuit breaker
 * open, or the target at its in-flight limit): not attempts, and shown apart from them.
 */
interface DeferralsView {
  count: number;
  lastAt: Date | null;
  lastReason: string | null;
}

export type DeliveryView = Omit<DeliveryRecord, 'deferrals' | 'lastDeferredAt' | 'lastDeferralReason'> & { deferrals: DeferralsView };

/** A delivery as the admin API shows it. */
export function deliveryView(record: DeliveryRecord): DeliveryView {
  const { deferrals, lastDeferredAt, lastDeferralReason, ...rest } = record;
  return { ...rest, lastError: scrub(record.lastError), deferrals: { count: deferrals, lastAt: lastDeferredAt, lastReason: lastDeferralReason } };
}

/** A delivery with its target and every attempt, as the admin API shows it. */
export function deliveryDetailView(detail: DeliveryDetail): DeliveryView & Pick<DeliveryDetail, 'target' | 'attempts'> {
  return {
    ...deliveryView(detail),
    target: detail.target,
    attempts: detail.attempts.map((attempt) => ({
      ...attempt,
      errorMessage: scrub(attempt.errorMessage),
      responseBody: scrub(attempt.responseBody),
      // Where this attempt went (the target's URL may have changed since): stored masked by the
      // worker, masked again here so that no row, however written, shows a query string's token.
      url: attempt.url === null ? null : maskQueryValues(attempt.url),
    })),
  };
}

/** A delivery as its tenant sees it in GET /deliveries: no target, no tenant ids, no free text. */
export function merchantDeliveryView(summary: DeliverySummary) {
  const { id, eventId, objectType, objectId, status, attemptsMade, lastAttemptAt, lastStatusCode, lastErrorKind, createdAt, completedAt, waitingFor } = summary;
  return { id, eventId, objectType, objectId, status, attemptsMade, lastAttemptAt, lastStatusCode, lastErrorKind, createdAt, completedAt, waitingFor };
}

/**
 * A delivery as its tenant sees it in GET /deliveries/{id}: every attempt with the first bytes of
 * the answer (scrubbed as for admins), and its deferrals. Not the attempts' error messages, which
 * may name addresses of Herald's own network (an address refused at connect time), nor the URL.
 */
export function merchantDeliveryDetailView(detail: DeliverySummary & { attempts: DeliveryAttemptRecord[] }) {
  return {
    ...merchantDeliveryView(detail),
    deferrals: { count: detail.deferrals, lastAt: detail.lastDeferredAt, lastReason: detail.lastDeferralReason },
    attempts: detail.attempts.map(({ number, startedAt, durationMs, statusCode, errorKind, responseBody }) => ({
      number,
      startedAt,
      durationMs,
      statusCode,
      errorKind,
      responseBody: scrub(responseBody),
    })),
  };
}
