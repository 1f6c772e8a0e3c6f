import type { Event } from '@herald/domain';
import { sqlPool, type PrismaClient } from '../client';
import { CredentialsCipherError, type CredentialsCipher } from '../credentials-cipher';
import type { DeliveryStatus } from '../generated/prisma/enums';
import { EVENT_COLUMN_LIST, toEvent, type EventRow } from './events';
import { deliveryTargetOf, type DeliveryTarget } from './targets';

/**
 * The delivery worker's reads and writes, in plain SQL through the Prisma client's pg pool: one
 * statement reads what a batch of attempts needs (delivery, target, event), one statement records
 * a batch of attempts (delivery_attempts rows and the deliveries' new state). The worker gathers
 * the jobs it runs at once into these batches (measured: four Prisma statements per callback cost
 * more CPU than the callback itself, in the worker and in PostgreSQL).
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

/** Everything one attempt needs, read in one statement. */
export interface DeliveryWork {
  delivery: DeliveryToAttempt;
  /**
   * The target with its credentials decrypted; the CredentialsCipherError when they cannot be
   * (so that one unreadable target fails only its own deliveries); null when the row is gone.
   */
  target: DeliveryTarget | CredentialsCipherError | null;
  /** The event exactly as GET /events returns it; null when the row is gone. */
  event: Event | null;
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

/** An attempt to record, with the state it leaves its delivery in. */
export interface AttemptRecord {
  deliveryId: string;
  attempt: NewDeliveryAttempt;
  outcome: AttemptOutcome;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// PostgreSQL text cannot hold NUL, which a merchant's answer may contain.
function storable(text: string | undefined): string | null {
  return text === undefined ? null : text.replaceAll('\u0000', '');
}

// Named statements: each pooled connection parses and plans them once.
const LOAD_STATEMENT = {
  name: 'delivery-work',
  text: `SELECT d.id::text AS delivery_id, d.event_id AS delivery_event_id, d.target_id::text AS delivery_target_id,
                d.status AS delivery_status, d.attempts_made AS delivery_attempts_made,
                t.id::text AS target_id, t.program_id AS target_program_id, t.merchant_id AS target_merchant_id, t.url AS target_url,
                t.auth_mode AS target_auth_mode, t.auth_url AS target_auth_url, t.credentials AS target_credentials,
                t.object_types AS target_object_types, t.event_types AS target_event_types, t.enabled AS target_enabled,
                t.deleted_at AS target_deleted_at,
                ${EVENT_COLUMN_LIST}
         FROM deliveries d
         LEFT JOIN notification_targets t ON t.id = d.target_id
         LEFT JOIN events e ON e.id = d.event_id
         WHERE d.id = ANY($1::uuid[])`,
};

// Attempts_made goes up by one and numbers the attempt, so numbers continue across replays, and
// two workers writing at once (a job taken over after its lock expired) cannot take the same
// number. A delivery that succeeded stays succeeded: a late failing attempt only adds its row.
// (In SET, the deliveries columns read their values from before the update.)
const RECORD_STATEMENT = {
  name: 'record-attempts',
  text: `WITH input AS (
           SELECT * FROM unnest($1::uuid[], $2::delivery_status[], $3::timestamptz[], $4::int[], $5::int[], $6::text[], $7::text[], $8::text[])
             AS i(delivery_id, outcome, started_at, duration_ms, status_code, error_kind, error_message, response_body)
         ), updated AS (
           UPDATE deliveries d SET
             attempts_made = d.attempts_made + 1,
             updated_at = now(),
             status = CASE WHEN d.status = 'succeeded' THEN d.status ELSE i.outcome END,
             last_status_code = CASE WHEN d.status = 'succeeded' THEN d.last_status_code ELSE i.status_code END,
             last_error = CASE WHEN d.status = 'succeeded' THEN d.last_error ELSE i.error_message END,
             completed_at = CASE WHEN d.status = 'succeeded' THEN d.completed_at WHEN i.outcome = 'pending' THEN NULL ELSE now() END
           FROM input i
           WHERE d.id = i.delivery_id
           RETURNING d.id, d.attempts_made
         )
         INSERT INTO delivery_attempts (delivery_id, number, started_at, duration_ms, status_code, error_kind, error_message, response_body)
         SELECT u.id, u.attempts_made, i.started_at, i.duration_ms, i.status_code, i.error_kind, i.error_message, i.response_body
         FROM updated u JOIN input i ON i.delivery_id = u.id
         RETURNING delivery_id::text AS delivery_id, number`,
};

type WorkRow = EventRow & {
  delivery_id: string;
  delivery_event_id: string;
  delivery_target_id: string;
  delivery_status: DeliveryStatus;
  delivery_attempts_made: number;
  target_id: string | null;
  target_program_id: string;
  target_merchant_id: string | null;
  target_url: string;
  target_auth_mode: string;
  target_auth_url: string | null;
  target_credentials: string | null;
  target_object_types: string[];
  target_event_types: string[];
  target_enabled: boolean;
  target_deleted_at: Date | null;
};

export function deliveryAttemptRepository(prisma: PrismaClient, cipher: CredentialsCipher) {
  const sql = sqlPool(prisma);

  const targetOf = (row: WorkRow): DeliveryWork['target'] => {
    if (row.target_id === null) return null;
    try {
      return deliveryTargetOf(
        {
          id: row.target_id,
          program_id: row.target_program_id,
          merchant_id: row.target_merchant_id,
          url: row.target_url,
          auth_mode: row.target_auth_mode,
          auth_url: row.target_auth_url,
          credentials: row.target_credentials,
          object_types: row.target_object_types,
          event_types: row.target_event_types,
          enabled: row.target_enabled,
          deleted_at: row.target_deleted_at,
        },
        cipher,
      );
    } catch (error) {
      if (error instanceof CredentialsCipherError) return error;
      throw error;
    }
  };

  /** One statement for attempts of distinct deliveries. */
  const recordDistinct = async (records: readonly AttemptRecord[]): Promise<Map<string, number>> => {
    // Sorted, so that two workers recording overlapping batches lock rows in the same order.
    const sorted = [...records].sort((a, b) => (a.deliveryId < b.deliveryId ? -1 : a.deliveryId > b.deliveryId ? 1 : 0));
    const { rows } = await sql.query<{ delivery_id: string; number: number }>({
      ...RECORD_STATEMENT,
      values: [
        sorted.map((r) => r.deliveryId),
        sorted.map((r) => r.outcome),
        sorted.map((r) => r.attempt.startedAt),
        sorted.map((r) => Math.round(r.attempt.durationMs)),
        sorted.map((r) => r.attempt.statusCode ?? null),
        sorted.map((r) => r.attempt.errorKind ?? null),
        sorted.map((r) => storable(r.attempt.errorMessage)),
        sorted.map((r) => storable(r.attempt.responseBody)),
      ],
    });
    return new Map(rows.map((row) => [row.delivery_id, row.number]));
  };

  /**
   * Records attempts and their deliveries' new states, and returns each attempt's number, in
   * the order of `records`; undefined where the delivery does not exist. Attempts of distinct
   * deliveries go in one statement; a delivery named twice gets its attempts in turn.
   */
  const recordAttempts = async (records: readonly AttemptRecord[]): Promise<Array<number | undefined>> => {
    const numbers: Array<number | undefined> = records.map(() => undefined);
    let rest = records.map((record, index) => ({ record, index })).filter(({ record }) => UUID.test(record.deliveryId));
    while (rest.length > 0) {
      const taken = new Set<string>();
      const round = rest.filter(({ record }) => !taken.has(record.deliveryId) && Boolean(taken.add(record.deliveryId)));
      rest = rest.filter((item) => !round.includes(item));
      const recorded = await recordDistinct(round.map(({ record }) => record));
      for (const { record, index } of round) numbers[index] = recorded.get(record.deliveryId);
    }
    return numbers;
  };

  return {
    /** What each delivery's attempt needs, by delivery id; unknown and malformed ids are absent. */
    async loadForAttempts(deliveryIds: readonly string[]): Promise<Map<string, DeliveryWork>> {
      const ids = [...new Set(deliveryIds.filter((id) => UUID.test(id)))];
      if (ids.length === 0) return new Map();
      const { rows } = await sql.query<WorkRow>({ ...LOAD_STATEMENT, values: [ids] });
      return new Map(
        rows.map((row) => [
          row.delivery_id,
          {
            delivery: {
              id: row.delivery_id,
              eventId: row.delivery_event_id,
              targetId: row.delivery_target_id,
              status: row.delivery_status,
              attemptsMade: row.delivery_attempts_made,
            },
            target: targetOf(row),
            event: row.id === null ? null : toEvent(row),
          },
        ]),
      );
    },

    recordAttempts,

    /** Records one attempt (see recordAttempts) and returns its number; throws when the delivery does not exist. */
    async record(deliveryId: string, attempt: NewDeliveryAttempt, outcome: AttemptOutcome): Promise<number> {
      const [number] = await recordAttempts([{ deliveryId, attempt, outcome }]);
      if (number === undefined) throw new Error(`Delivery ${deliveryId} does not exist.`);
      return number;
    },
  };
}

export type DeliveryAttemptRepository = ReturnType<typeof deliveryAttemptRepository>;
