import { isUuid } from '@herald/domain';
import type { ExpressionBuilder } from 'kysely';
import type { DatabasePool } from '../pool';
import { DeliveryStatus as STATUS, type DB } from '../generated/kysely/schema';
import { allOf, db, inTransaction, run, sql, type RowOf } from '../sql';

/**
 * The delivery history as support and ops read it (every delivery of an event, every attempt of
 * a delivery), and replay: a delivery set back to pending and enqueued again, so that the worker
 * makes new attempts whose numbers continue the old ones.
 */

export type DeliveryStatus = (typeof STATUS)[keyof typeof STATUS];
/** Where a delivery stands, as the Prisma schema's enum has it. */
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = Object.values(STATUS);

/** Which deliveries a list or a bulk replay takes; every field set must match. */
export interface DeliveryFilter {
  status?: DeliveryStatus;
  /** The program of the delivery's event. */
  programId?: string;
  /** The merchant of the delivery's event (a program target's deliveries of it included). */
  merchantId?: string;
  eventId?: string;
  /** The object of the delivery's event. */
  objectId?: string;
  targetId?: string;
  /**
   * The target's owner key (`program:<id>` or `merchant:<id>`, see targetOwnerKey): a tenant's own
   * deliveries, whether its target is on, off or deleted (a deleted target keeps its row).
   */
  targetOwnerKey?: string;
  /** Deliveries created at or after this time. */
  createdFrom?: Date;
  /** Deliveries created before this time. */
  createdTo?: Date;
}

/** A delivery with its target and every attempt, oldest first. */
export interface DeliveryDetail extends DeliveryRecord {
  target: {
    id: string;
    /** A program's target (all its notifications) or a merchant's. */
    owner: 'program' | 'merchant';
    url: string;
    /** False once the target is switched off or deleted. */
    enabled: boolean;
  };
  attempts: DeliveryAttemptRecord[];
}

export interface DeliveryListQuery {
  filter: DeliveryFilter;
  /** 1-based. */
  page: number;
  pageSize: number;
}

/** What a replay takes: one delivery, or the oldest `limit` deliveries matching a filter. */
export type ReplaySelection = { deliveryId: string } | { filter: DeliveryFilter; limit: number };

/** A delivery a replay locked, with whose target it goes to (for its new job's name). */
export interface ReplayCandidate extends DeliveryRecord {
  targetOwner: 'program' | 'merchant';
}

/**
 * A replay's statements on one transaction: the rows it locks stay locked until it ends, so the
 * worker and the sweeper cannot write them in between (see createReplay in @herald/outbox).
 */
export interface ReplayTransaction {
  /**
   * Locks (FOR UPDATE) the deliveries `selection` takes, oldest first, and says whether more
   * match than its limit. A single delivery that does not exist gives none.
   */
  lockForReplay(selection: ReplaySelection): Promise<{ deliveries: ReplayCandidate[]; more: boolean }>;
  /** Sets deliveries back to pending at `now`; with `needJob` they also lose their enqueued mark, for the sweeper. */
  reset(deliveryIds: readonly string[], needJob: boolean, now: Date): Promise<void>;
}

/** How long a replay's transaction may sit idle holding its row locks (waiting on Redis) before PostgreSQL ends it. */
const REPLAY_TRANSACTION_IDLE_MS = 30_000;

/** A delivery joined with its event (d, e), as the repository's statements read it. */
type Joined = ExpressionBuilder<DB & { d: DB['deliveries']; e: DB['events'] }, 'd' | 'e'>;

/** One condition per filter field; the same filter drives lists, counts and replays. */
function matching(eb: Joined, filter: DeliveryFilter & { id?: string }) {
  return allOf(eb, [
    filter.id !== undefined && eb('d.id', '=', filter.id),
    filter.status !== undefined && eb('d.status', '=', filter.status),
    filter.programId !== undefined && eb('e.program_id', '=', filter.programId),
    filter.merchantId !== undefined && eb('e.merchant_id', '=', filter.merchantId),
    filter.eventId !== undefined && eb('d.event_id', '=', filter.eventId),
    filter.objectId !== undefined && eb('e.object_id', '=', filter.objectId),
    filter.targetId !== undefined && eb('d.target_id', '=', filter.targetId),
    // A scalar subquery, run once: the deliveries are then read through (target_id, created_at).
    filter.targetOwnerKey !== undefined &&
      eb('d.target_id', '=', eb.selectFrom('notification_targets').select('id').where('owner_key', '=', filter.targetOwnerKey)),
    filter.createdFrom !== undefined && eb('d.created_at', '>=', filter.createdFrom),
    filter.createdTo !== undefined && eb('d.created_at', '<', filter.createdTo),
  ]);
}

/** Deliveries with their event's tenant, filtered. */
const deliveries = (filter: DeliveryFilter & { id?: string }) =>
  db
    .selectFrom('deliveries as d')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .where((eb) => matching(eb, filter));

/** The fields of a DeliveryRecord, named as such. */
const RECORD_COLUMNS = [
  'd.id',
  'd.event_id as eventId',
  'd.target_id as targetId',
  'e.program_id as programId',
  'e.merchant_id as merchantId',
  'd.status',
  'd.attempts_made as attemptsMade',
  'd.last_status_code as lastStatusCode',
  'd.last_error as lastError',
  'd.created_at as createdAt',
  'd.updated_at as updatedAt',
  'd.enqueued_at as enqueuedAt',
  'd.completed_at as completedAt',
  'd.deferrals',
  'd.last_deferred_at as lastDeferredAt',
  'd.last_deferral_reason as lastDeferralReason',
  'd.waiting_for as waitingFor',
] as const;

/**
 * The fields of a DeliverySummary: what a tenant sees of its delivery, its event's object, and its
 * last attempt (the attempt numbered attemptsMade: numbers count up from 1, replays included).
 */
const SUMMARY_COLUMNS = [
  'd.id',
  'd.event_id as eventId',
  'e.object_type as objectType',
  'e.object_id as objectId',
  'd.status',
  'd.attempts_made as attemptsMade',
  'a.started_at as lastAttemptAt',
  'a.status_code as lastStatusCode',
  'a.error_kind as lastErrorKind',
  'd.created_at as createdAt',
  'd.completed_at as completedAt',
  'd.deferrals',
  'd.last_deferred_at as lastDeferredAt',
  'd.last_deferral_reason as lastDeferralReason',
  'd.waiting_for as waitingFor',
] as const;

/** Every statement of the repository, built from its parameters (the SQL snapshot compiles each). */
export const deliveryHistoryQueries = {
  /** The pending deliveries among `ids` that wait for a predecessor (a dashboard page's jobs: a handful of ids). */
  waitingFor: (ids: readonly string[]) =>
    db
      .selectFrom('deliveries')
      .select(['id', 'waiting_for'])
      .where('id', '=', (eb) => eb.fn.any(sql<string[]>`${ids}::uuid[]`))
      .where('status', '=', 'pending')
      .where('waiting_for', 'is not', null),
  /** A page of the deliveries matching, newest first. */
  page: (filter: DeliveryFilter, limit: number, offset: number) =>
    deliveries(filter).select(RECORD_COLUMNS).orderBy('d.created_at', 'desc').orderBy('d.id', 'desc').limit(limit).offset(offset),
  /** A page of the deliveries matching as summaries, newest first; the last attempt is found by its unique key, in its own week. */
  summaries: (filter: DeliveryFilter & { id?: string }, limit: number, offset: number) =>
    deliveries(filter)
      .leftJoin('delivery_attempts as a', (join) =>
        join.onRef('a.delivery_id', '=', 'd.id').onRef('a.delivery_created_at', '=', 'd.created_at').onRef('a.number', '=', 'd.attempts_made'),
      )
      .select(SUMMARY_COLUMNS)
      .orderBy('d.created_at', 'desc')
      .orderBy('d.id', 'desc')
      .limit(limit)
      .offset(offset),
  count: (filter: DeliveryFilter) => deliveries(filter).select((eb) => eb.fn.countAll<string>().as('count')),
  find: (deliveryId: string) => deliveries({ id: deliveryId }).select(RECORD_COLUMNS),
  /** Every delivery of an event, oldest first. */
  ofEvent: (eventId: string) => deliveries({ eventId }).select(RECORD_COLUMNS).orderBy('d.created_at').orderBy('d.id'),
  eventExists: (eventId: string) => db.selectFrom('events').select('id').where('id', '=', eventId),
  targets: (targetIds: readonly string[]) =>
    db
      .selectFrom('notification_targets')
      .select(['id', 'merchant_id', 'url', 'enabled', 'deleted_at'])
      .where('id', '=', (eb) => eb.fn.any(sql<string[]>`${targetIds}::uuid[]`)),
  attempts: (deliveryIds: readonly string[]) =>
    db
      .selectFrom('delivery_attempts')
      .select([
        'delivery_id',
        'number',
        'started_at as startedAt',
        'duration_ms as durationMs',
        'status_code as statusCode',
        'error_kind as errorKind',
        'error_message as errorMessage',
        'response_body as responseBody',
        'url',
      ])
      .where('delivery_id', '=', (eb) => eb.fn.any(sql<string[]>`${deliveryIds}::uuid[]`))
      .orderBy('delivery_id')
      .orderBy('number'),
  /** The deliveries a replay takes, with whose target each goes to, oldest first, locked until the replay commits. */
  lockForReplay: (filter: DeliveryFilter & { id?: string }, limit: number) =>
    deliveries(filter)
      .innerJoin('notification_targets as t', 't.id', 'd.target_id')
      .select(RECORD_COLUMNS)
      .select(sql<'program' | 'merchant'>`case when t.merchant_id is null then 'program' else 'merchant' end`.as('targetOwner'))
      .orderBy('d.created_at')
      .orderBy('d.id')
      .limit(limit)
      .forUpdate('d'),
  /** Sets deliveries back to pending; `needJob` ones also lose their enqueued mark, for the sweeper. */
  reset: (deliveryIds: readonly string[], needJob: boolean, now: Date) =>
    db
      .updateTable('deliveries')
      .set({ status: 'pending', completed_at: null, updated_at: now })
      .$if(needJob, (q) => q.set({ enqueued_at: null }))
      .where('id', '=', (eb) => eb.fn.any(sql<string[]>`${deliveryIds}::uuid[]`)),
};

/**
 * One delivery (an event for one notification target) and where it stands: its event's tenant
 * (programId, merchantId), status, attemptsMade (replays included), lastStatusCode (when the
 * merchant answered) and lastError of the last attempt, createdAt, updatedAt, enqueuedAt (when
 * its job was last put in the queue; null while it waits for the sweeper) and completedAt (when
 * it succeeded or used its last attempt), deferrals (times its job was sent back to wait without a
POST, by its target's breaker or in-flight limit: not attempts), lastDeferredAt and
lastDeferralReason, and waitingFor (an ordered target's: the earlier delivery of the same object
it waits for, null when not waiting). Typed by the statement from the schema.
 */
export type DeliveryRecord = RowOf<ReturnType<typeof deliveryHistoryQueries.find>>;

/**
 * One HTTP try of a delivery, as the worker recorded it: number (1 for the first try; replays
 * continue the count), startedAt, durationMs, statusCode (null when there was no answer, see
 * errorKind), errorKind, errorMessage, responseBody (the first bytes of the merchant's answer), url (where the
 * callback was sent, query string values masked; null when nothing was sent, and for attempts
 * recorded before URLs were).
 */
export type DeliveryAttemptRecord = Omit<RowOf<ReturnType<typeof deliveryHistoryQueries.attempts>>, 'delivery_id'>;

/**
 * A delivery as its tenant sees it: id, eventId, the event's objectType and objectId, status,
 * attemptsMade, its last attempt's start (lastAttemptAt), status code and error kind (null before
 * any attempt), createdAt, completedAt and its deferrals (as DeliveryRecord's). No target, no tenant
 * ids, no free text: the list is scoped to one target already.
 */
export type DeliverySummary = RowOf<ReturnType<typeof deliveryHistoryQueries.summaries>>;

export function deliveryHistoryRepository(pool: DatabasePool) {
  /** The deliveries matching, with their targets and attempts, in the order given. */
  const details = async (records: DeliveryRecord[]): Promise<DeliveryDetail[]> => {
    if (records.length === 0) return [];
    const [targets, attempts] = await Promise.all([
      run(pool, deliveryHistoryQueries.targets([...new Set(records.map((r) => r.targetId))])),
      run(pool, deliveryHistoryQueries.attempts(records.map((r) => r.id))),
    ]);
    const targetsById = new Map(targets.rows.map((t) => [t.id, t]));
    return records.map((record) => {
      const target = targetsById.get(record.targetId)!;
      return {
        ...record,
        target: {
          id: target.id,
          owner: target.merchant_id === null ? 'program' : 'merchant',
          url: target.url,
          enabled: target.enabled && target.deleted_at === null,
        },
        attempts: attempts.rows.filter((a) => a.delivery_id === record.id).map(({ delivery_id: _, ...attempt }) => attempt),
      };
    });
  };

  return {
    /** A page of the deliveries matching, newest first, and how many match in all. */
    async list(query: DeliveryListQuery): Promise<{ count: number; deliveries: DeliveryRecord[] }> {
      const [page, counted] = await Promise.all([
        run(pool, deliveryHistoryQueries.page(query.filter, query.pageSize, (query.page - 1) * query.pageSize)),
        run(pool, deliveryHistoryQueries.count(query.filter)),
      ]);
      return { count: Number(counted.rows[0]!.count), deliveries: page.rows };
    },

    /** A page of the deliveries matching as summaries, newest first, and how many match in all. */
    async listSummaries(query: DeliveryListQuery): Promise<{ count: number; deliveries: DeliverySummary[] }> {
      const [page, counted] = await Promise.all([
        run(pool, deliveryHistoryQueries.summaries(query.filter, query.pageSize, (query.page - 1) * query.pageSize)),
        run(pool, deliveryHistoryQueries.count(query.filter)),
      ]);
      return { count: Number(counted.rows[0]!.count), deliveries: page.rows };
    },

    /**
     * One delivery among those `within` matches (a tenant's own, say), as a summary with every
     * attempt; null when there is none, or it is not among them.
     */
    async findSummary(deliveryId: string, within: DeliveryFilter): Promise<(DeliverySummary & { attempts: DeliveryAttemptRecord[] }) | null> {
      if (!isUuid(deliveryId)) return null;
      const [summary] = (await run(pool, deliveryHistoryQueries.summaries({ ...within, id: deliveryId }, 1, 0))).rows;
      if (!summary) return null;
      const { rows } = await run(pool, deliveryHistoryQueries.attempts([summary.id]));
      return { ...summary, attempts: rows.map(({ delivery_id: _, ...attempt }) => attempt) };
    },

    /** Of these deliveries, those waiting for an earlier delivery of their object (an ordered target's), with the one each waits for. */
    async waitingFor(deliveryIds: readonly string[]): Promise<Map<string, string>> {
      const ids = deliveryIds.filter((id) => isUuid(id));
      if (ids.length === 0) return new Map();
      const { rows } = await run(pool, deliveryHistoryQueries.waitingFor(ids));
      return new Map(rows.map((row) => [row.id, row.waiting_for!]));
    },

    /** One delivery with its target and every attempt; null when there is none. */
    async find(deliveryId: string): Promise<DeliveryDetail | null> {
      if (!isUuid(deliveryId)) return null;
      const { rows } = await run(pool, deliveryHistoryQueries.find(deliveryId));
      const [detail] = await details(rows);
      return detail ?? null;
    },

    /** Every delivery of an event, oldest first, with targets and attempts; null when the event does not exist. */
    async listForEvent(eventId: string): Promise<DeliveryDetail[] | null> {
      const [found, event] = await Promise.all([run(pool, deliveryHistoryQueries.ofEvent(eventId)), run(pool, deliveryHistoryQueries.eventExists(eventId))]);
      return event.rows.length > 0 ? details(found.rows) : null;
    },

    /** Runs `work` on one transaction with the replay's statements (see ReplayTransaction): committed when it resolves, rolled back when it throws. */
    transaction<T>(work: (tx: ReplayTransaction) => Promise<T>): Promise<T> {
      return inTransaction(
        pool,
        (tx) =>
          work({
            async lockForReplay(selection) {
              if ('deliveryId' in selection && !isUuid(selection.deliveryId)) return { deliveries: [], more: false };
              const filter = 'deliveryId' in selection ? { id: selection.deliveryId } : selection.filter;
              const limit = 'deliveryId' in selection ? 1 : selection.limit;
              // One row past the limit says whether more match; it is locked too, which is harmless.
              const { rows } = await run(tx, deliveryHistoryQueries.lockForReplay(filter, limit + 1));
              return { deliveries: rows.slice(0, limit), more: rows.length > limit };
            },
            async reset(deliveryIds, needJob, now) {
              if (deliveryIds.length > 0) await run(tx, deliveryHistoryQueries.reset(deliveryIds, needJob, now));
            },
          }),
        // A call to Redis stuck while the rows are locked must not keep them.
        { idleTimeoutMs: REPLAY_TRANSACTION_IDLE_MS },
      );
    },
  };
}

export type DeliveryHistoryRepository = ReturnType<typeof deliveryHistoryRepository>;
