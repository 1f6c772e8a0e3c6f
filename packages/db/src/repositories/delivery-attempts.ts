import { Prisma, type PrismaClient } from '../client';
import type { DeliveryStatus } from '../generated/prisma/enums';

/**
 * The delivery worker's writes: one row per HTTP try of a delivery (delivery_attempts), and the
 * delivery's own state (status, attempts_made, last_status_code, last_error, completed_at).
 */

/** What the worker reads of a delivery before it tries it. */
export interface DeliveryToAttempt {
  id: string;
  eventId: string;
  targetId: string;
  status: DeliveryStatus;
  /** Attempts recorded so far, replays included. */
  attemptsMade: number;
}

/** One try of a delivery, as the worker measured it. Text is stored as given: keep secrets out of it. */
export interface NewDeliveryAttempt {
  startedAt: Date;
  durationMs: number;
  /** The merchant's HTTP status, when it answered. */
  statusCode?: number;
  /** Why the try failed: timeout, connection, redirect, http_status, oauth, ... */
  errorKind?: string;
  /** What went wrong, for support; also becomes the delivery's last_error. */
  errorMessage?: string;
  /** The first bytes of the merchant's answer. */
  responseBody?: string;
}

/** The delivery's state after the attempt: delivered, waiting for its next try, or given up. */
export type AttemptOutcome = DeliveryStatus;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// PostgreSQL text cannot hold NUL, which a merchant's answer may contain.
function storable(text: string | undefined): string | null {
  return text === undefined ? null : text.replaceAll('\u0000', '');
}

export function deliveryAttemptRepository(prisma: PrismaClient) {
  return {
    /** The delivery to try, or null when there is none. */
    async findForAttempt(deliveryId: string): Promise<DeliveryToAttempt | null> {
      if (!UUID.test(deliveryId)) return null;
      return prisma.delivery.findUnique({
        where: { id: deliveryId },
        select: { id: true, eventId: true, targetId: true, status: true, attemptsMade: true },
      });
    },

    /**
     * Records one attempt and the delivery's new state in one statement, and returns the attempt's
     * number: attempts_made goes up by one and numbers the attempt, so numbers continue across
     * replays and two workers writing at once (a job taken over after its lock expired) cannot take
     * the same number. A delivery that succeeded stays succeeded: a late failing attempt only adds
     * its row.
     */
    async record(deliveryId: string, attempt: NewDeliveryAttempt, outcome: AttemptOutcome): Promise<number> {
      const statusCode = attempt.statusCode ?? null;
      const errorMessage = storable(attempt.errorMessage);
      const completedAt = outcome === 'pending' ? Prisma.sql`NULL` : Prisma.sql`now()`;
      const rows = await prisma.$queryRaw<Array<{ number: number }>>`
        WITH d AS (
          UPDATE deliveries SET
            attempts_made = attempts_made + 1,
            updated_at = now(),
            status = CASE WHEN status = 'succeeded' THEN status ELSE ${outcome}::delivery_status END,
            last_status_code = CASE WHEN status = 'succeeded' THEN last_status_code ELSE ${statusCode}::int END,
            last_error = CASE WHEN status = 'succeeded' THEN last_error ELSE ${errorMessage}::text END,
            completed_at = CASE WHEN status = 'succeeded' THEN completed_at ELSE ${completedAt} END
          WHERE id = ${deliveryId}::uuid
          RETURNING id, attempts_made
        )
        INSERT INTO delivery_attempts (delivery_id, number, started_at, duration_ms, status_code, error_kind, error_message, response_body)
        SELECT d.id, d.attempts_made, ${attempt.startedAt}::timestamptz, ${Math.round(attempt.durationMs)}::int, ${statusCode}::int,
               ${attempt.errorKind ?? null}::text, ${errorMessage}::text, ${storable(attempt.responseBody)}::text
        FROM d
        RETURNING number`;
      const [row] = rows;
      if (!row) throw new Error(`Delivery ${deliveryId} does not exist.`);
      return row.number;
    },
  };
}

export type DeliveryAttemptRepository = ReturnType<typeof deliveryAttemptRepository>;
