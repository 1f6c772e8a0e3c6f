import { isUuid, type RoutingTarget } from '@herald/domain';
import type { DatabasePool } from '../pool';
import { db, inTransaction, run, sql, type RowOf } from '../sql';
import { storedWithin, type StoredRange } from '../stored-range';
import { deliveryHistoryQueries } from './delivery-history';

/**
 * A merchant's recoveries (POST /deliveries/recover): the statements that find what a target has
 * not received in a window, queue it again, and tell how it went. The policy (what is locked, when
 * Redis is asked) is the outbox's (@herald/outbox createRecovery); who is notified is the domain's
 * routing rule. This module only stores and loads.
 */

/** The target a recovery sends to, as the routing rule reads it, and whether it is switched off. */
export interface RecoveryTarget extends RoutingTarget {
  /** `auto-disabled`, or null (switched off by support, or on). */
  disabledReason: string | null;
  /** When the target was set up: it never missed what Herald stored before. */
  createdAt: Date;
}

/** The window of a recovery, on its events' createdAt, and the oldest storage time it may reach. */
export interface RecoveryWindow {
  from: Date;
  to: Date;
  /** Only events Herald stored at or after this time: within RECOVERY_MAX_DAYS, hence within retention. */
  storedSince: Date;
}

/**
 * An event of the window its target has no delivered callback for: never sent (no delivery) or
 * failed. What the routing rule reads of it, and its delivery if any.
 */
export interface RecoveryCandidate {
  eventId: string;
  programId: string;
  merchantId: string | null;
  objectType: string;
  eventType: string;
  createdAt: Date;
  /** When Herald stored the event: the created_at of its deliveries, old and new. */
  ingestedAt: Date;
  /** The failed delivery to the target; null when none was ever created. */
  deliveryId: string | null;
}

/** Where a scan of candidates goes on from: after this event, in (createdAt, id) order. */
export interface CandidateCursor {
  createdAt: Date;
  eventId: string;
}

/** A failed delivery a recovery locked, to set back to pending. */
export interface LockedFailedDelivery {
  id: string;
  eventId: string;
  attemptsMade: number;
  createdAt: Date;
}

/** A recovery with its deliveries' progress. */
export interface RecoveryRecord {
  id: string;
  targetId: string;
  from: Date;
  to: Date;
  coveredTo: Date;
  createdAt: Date;
  /** Deliveries queued, and of those created for events never sent. */
  queued: number;
  created: number;
  /** Of the deliveries queued: still pending, attempted since (sent), succeeded (delivered), failed again. */
  pending: number;
  sent: number;
  delivered: number;
  failed: number;
  /** When the last of its deliveries became final; null while one is pending. */
  finishedAt: Date | null;
  /** Whether its counts are stored (frozen) rather than read from its deliveries. */
  frozen: boolean;
}

/** What a recovery stores when it has queued its deliveries. */
export interface NewRecovery {
  id: string;
  targetId: string;
  ownerKey: string;
  from: Date;
  to: Date;
  coveredTo: Date;
  created: number;
  deliveries: ReadonlyArray<{ deliveryId: string; deliveryCreatedAt: Date; attemptsBefore: number }>;
}

const uuids = (ids: readonly string[]) => sql<string[]>`${ids}::uuid[]`;
/** The class of the recovery locks (ASCII "Herc"), keyed by a hash of the target id; the ingest month's lock is "Hera". */
const RECOVERY_LOCK = sql.lit(0x4865_7263);

/** The progress columns of a recovery `r`, from its deliveries `rd` joined to `d` (each in its own week). */
const progress = db
  .selectFrom('recoveries as r')
  .leftJoin('recovery_deliveries as rd', 'rd.recovery_id', 'r.id')
  .leftJoin('deliveries as d', (join) => join.onRef('d.id', '=', 'rd.delivery_id').onRef('d.created_at', '=', 'rd.delivery_created_at'))
  .select([
    'r.id',
    'r.target_id as targetId',
    'r.from_time as from',
    'r.to_time as to',
    'r.covered_to as coveredTo',
    'r.created_at as createdAt',
    'r.queued',
    'r.created',
    'r.finished_at as frozenAt',
    'r.sent as frozenSent',
    'r.delivered as frozenDelivered',
    'r.failed as frozenFailed',
    sql<string>`count(d.id) filter (where d.status = 'pending')`.as('pending'),
    sql<string>`count(d.id) filter (where d.attempts_made > rd.attempts_before)`.as('sent'),
    sql<string>`count(d.id) filter (where d.status = 'succeeded')`.as('delivered'),
    sql<string>`count(d.id) filter (where d.status = 'failed' and d.attempts_made > rd.attempts_before)`.as('failed'),
    sql<Date | null>`max(d.completed_at)`.as('lastCompletedAt'),
  ])
  .groupBy('r.id');

/** Every statement of the repository, built from its parameters (the SQL snapshot compiles each). */
export const recoveryQueries = {
  /**
   * The owner's target, and a lock on recovering it held to the end of the transaction: a second
   * recovery of the target waits here for the first to be stored. An advisory lock, not the row's:
   * the worker writes the target's health in its row, and no recovery may hold up those writes.
   */
  lockTarget: (ownerKey: string) =>
    db
      .selectFrom('notification_targets')
      .select((eb) => [
        'id',
        'program_id as programId',
        'merchant_id as merchantId',
        'object_types as objectTypes',
        'event_types as eventTypes',
        'enabled',
        eb('deleted_at', 'is not', null).$castTo<boolean>().as('deleted'),
        'disabled_reason as disabledReason',
        'created_at as createdAt',
        sql<string>`pg_advisory_xact_lock(${RECOVERY_LOCK}, hashtext(id::text))`.as('locked'),
      ])
      .where('owner_key', '=', ownerKey),

  /** The target's recoveries not yet found over, with their progress. */
  unfinished: (targetId: string) => progress.where('r.target_id', '=', targetId).where('r.finished_at', 'is', null),

  /** One recovery of an owner, with its progress. */
  find: (id: string, ownerKey: string) => progress.where('r.id', '=', id).where('r.owner_key', '=', ownerKey),

  /** Freezes a recovery found over, with its counts as they stand. */
  finish: (id: string, at: Date, counts: { sent: number; delivered: number; failed: number }) =>
    db
      .updateTable('recoveries')
      .set({ finished_at: at, sent: counts.sent, delivered: counts.delivered, failed: counts.failed })
      .where('id', '=', id)
      .where('finished_at', 'is', null),

  /**
   * The next events of the window, in (createdAt, id) order, of the target's tenant (its program's,
   * or its merchant's), that have no delivery to it or a failed one: read through the tenant's
   * (created_at, id, ingested_at) index, each delivery through its one-per-target key (a delivery's
   * created_at is its event's ingested_at). Which of them the target takes is the routing rule's call.
   */
  candidates: (target: { id: string; programId: string; merchantId: string | null }, window: RecoveryWindow, after: CandidateCursor | null, limit: number) =>
    db
      .selectFrom('events as e')
      .leftJoin('deliveries as d', (join) =>
        join.onRef('d.event_id', '=', 'e.id').on('d.target_id', '=', target.id).onRef('d.created_at', '=', 'e.ingested_at'),
      )
      .select([
        'e.id as eventId',
        'e.program_id as programId',
        'e.merchant_id as merchantId',
        'e.object_type as objectType',
        'e.event_type as eventType',
        'e.created_at as createdAt',
        'e.ingested_at as ingestedAt',
        'd.id as deliveryId',
      ])
      .where((eb) => (target.merchantId === null ? eb('e.program_id', '=', target.programId) : eb('e.merchant_id', '=', target.merchantId)))
      .where('e.created_at', '>=', window.from)
      .where('e.created_at', '<', window.to)
      .where('e.ingested_at', '>=', window.storedSince)
      .$if(after !== null, (q) => q.where((eb) => eb(eb.refTuple('e.created_at', 'e.id'), '>', eb.tuple(after!.createdAt, after!.eventId))))
      .where((eb) => eb.or([eb('d.id', 'is', null), eb('d.status', '=', 'failed')]))
      .orderBy('e.created_at')
      .orderBy('e.id')
      .limit(limit),

  /** These deliveries, locked, if they are still failed (an admin's replay may have taken one meanwhile). */
  lockFailed: (deliveryIds: readonly string[], stored: StoredRange) =>
    db
      .selectFrom('deliveries as d')
      .select(['d.id', 'd.event_id as eventId', 'd.attempts_made as attemptsMade', 'd.created_at as createdAt'])
      .where('d.id', '=', (eb) => eb.fn.any(uuids(deliveryIds)))
      .where(storedWithin('d.created_at', stored))
      .where('d.status', '=', 'failed')
      .orderBy('d.created_at')
      .orderBy('d.id')
      .forUpdate(),

  /**
   * Creates the deliveries of events never sent to the target, pending and unmarked (their jobs are
   * added after the commit, or by the sweeper), each in its event's week; one that exists already
   * (the one-per-target key) is left alone and not returned.
   */
  insertDeliveries: (targetId: string, rows: ReadonlyArray<{ id: string; eventId: string; createdAt: Date }>) =>
    db
      .insertInto('deliveries')
      .columns(['id', 'event_id', 'target_id', 'created_at', 'updated_at'])
      .expression((eb) =>
        eb
          .selectFrom(
            sql<{
              id: string;
              event_id: string;
              created_at: Date;
            }>`unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.eventId)}::text[], ${rows.map((r) => r.createdAt)}::timestamptz[])`.as<'n'>(
              sql`n(id, event_id, created_at)`,
            ),
          )
          .select(['n.id', 'n.event_id', sql<string>`${targetId}::uuid`.as('target_id'), 'n.created_at', sql<Date>`now()`.as('updated_at')]),
      )
      .onConflict((oc) => oc.columns(['event_id', 'target_id', 'created_at']).doNothing())
      .returning(['id', 'event_id as eventId', 'created_at as createdAt']),

  insertRecovery: (recovery: NewRecovery) =>
    db.insertInto('recoveries').values({
      id: recovery.id,
      target_id: recovery.targetId,
      owner_key: recovery.ownerKey,
      from_time: recovery.from,
      to_time: recovery.to,
      covered_to: recovery.coveredTo,
      queued: recovery.deliveries.length,
      created: recovery.created,
      // A recovery that queued nothing is over as it starts.
      ...(recovery.deliveries.length === 0 ? { finished_at: sql<Date>`now()`, sent: 0, delivered: 0, failed: 0 } : {}),
    }),

  tagDeliveries: (recoveryId: string, deliveries: NewRecovery['deliveries']) =>
    db
      .insertInto('recovery_deliveries')
      .columns(['recovery_id', 'delivery_id', 'delivery_created_at', 'attempts_before'])
      .expression((eb) =>
        eb
          .selectFrom(
            sql<{
              delivery_id: string;
              delivery_created_at: Date;
              attempts_before: number;
            }>`unnest(${deliveries.map((d) => d.deliveryId)}::uuid[], ${deliveries.map((d) => d.deliveryCreatedAt)}::timestamptz[], ${deliveries.map((d) => d.attemptsBefore)}::int[])`.as<'t'>(
              sql`t(delivery_id, delivery_created_at, attempts_before)`,
            ),
          )
          .select([sql<string>`${recoveryId}::uuid`.as('recovery_id'), 't.delivery_id', 't.delivery_created_at', 't.attempts_before']),
      ),
};

type ProgressRow = RowOf<ReturnType<typeof recoveryQueries.find>>;

/** A progress row as a RecoveryRecord: frozen counts once finished, live ones before. */
function recordOf(row: ProgressRow): RecoveryRecord {
  const pending = Number(row.pending);
  const live = { sent: Number(row.sent), delivered: Number(row.delivered), failed: Number(row.failed) };
  const frozen = row.frozenAt !== null;
  return {
    id: row.id,
    targetId: row.targetId,
    from: row.from,
    to: row.to,
    coveredTo: row.coveredTo,
    createdAt: row.createdAt,
    queued: row.queued,
    created: row.created,
    pending: frozen ? 0 : pending,
    sent: frozen ? (row.frozenSent ?? 0) : live.sent,
    delivered: frozen ? (row.frozenDelivered ?? 0) : live.delivered,
    failed: frozen ? (row.frozenFailed ?? 0) : live.failed,
    finishedAt: frozen ? row.frozenAt : pending === 0 ? (row.lastCompletedAt ?? row.createdAt) : null,
    frozen,
  };
}

/** A recovery's statements on one transaction: the target's recovery lock is held until it ends. */
export interface RecoveryTransaction {
  /** The owner's target, with its recovery lock (see recoveryQueries.lockTarget); null when it has none (or only a deleted one). */
  lockTarget(ownerKey: string): Promise<RecoveryTarget | null>;
  /** The target's recoveries not yet frozen, with their progress (finishedAt set when every delivery is final). */
  unfinished(targetId: string): Promise<RecoveryRecord[]>;
  /** Freezes a recovery that is over with its counts as they stand. */
  finish(recovery: RecoveryRecord): Promise<void>;
  /** Up to `limit` candidates after `after` (see recoveryQueries.candidates). */
  candidates(target: RecoveryTarget, window: RecoveryWindow, after: CandidateCursor | null, limit: number): Promise<RecoveryCandidate[]>;
  /** Locks these deliveries if still failed; returns those, oldest first. */
  lockFailed(deliveryIds: readonly string[], stored: StoredRange): Promise<LockedFailedDelivery[]>;
  /** Creates pending, unmarked deliveries to the target; returns those created (not those that existed). */
  insertDeliveries(
    targetId: string,
    rows: ReadonlyArray<{ id: string; eventId: string; createdAt: Date }>,
  ): Promise<Array<{ id: string; eventId: string; createdAt: Date }>>;
  /** Sets failed deliveries back to pending and unmarked, for their new jobs (the replay's reset). */
  reset(deliveryIds: readonly string[], needJob: boolean, now: Date): Promise<void>;
  /** Stores the recovery and tags the deliveries it queued. */
  record(recovery: NewRecovery): Promise<void>;
}

/** How long a recovery's transaction may sit idle holding its row locks (waiting on Redis) before PostgreSQL ends it. */
const RECOVERY_TRANSACTION_IDLE_MS = 30_000;

export function recoveryRepository(pool: DatabasePool) {
  return {
    /** One recovery of the owner (`program:<id>` or `merchant:<id>`), with its progress; null when the owner has no such recovery. */
    async find(id: string, ownerKey: string): Promise<RecoveryRecord | null> {
      if (!isUuid(id)) return null;
      const [row] = (await run(pool, recoveryQueries.find(id, ownerKey))).rows;
      return row ? recordOf(row) : null;
    },

    /** Stores the counts of a recovery found over (finishedAt set), so that they outlive its deliveries; a no-op when stored already. */
    async finish(recovery: RecoveryRecord): Promise<void> {
      if (recovery.finishedAt === null || recovery.frozen) return;
      await run(pool, recoveryQueries.finish(recovery.id, recovery.finishedAt, recovery));
    },

    /** Runs `work` on one transaction with the recovery's statements: committed when it resolves, rolled back when it throws. */
    transaction<T>(work: (tx: RecoveryTransaction) => Promise<T>): Promise<T> {
      return inTransaction(
        pool,
        (tx) =>
          work({
            async lockTarget(ownerKey) {
              const [row] = (await run(tx, recoveryQueries.lockTarget(ownerKey))).rows;
              if (!row || row.deleted) return null;
              const { locked: _locked, ...target } = row;
              return target;
            },
            async unfinished(targetId) {
              return (await run(tx, recoveryQueries.unfinished(targetId))).rows.map(recordOf);
            },
            async finish(recovery) {
              await run(tx, recoveryQueries.finish(recovery.id, recovery.finishedAt ?? new Date(), recovery));
            },
            async candidates(target, window, after, limit) {
              return (await run(tx, recoveryQueries.candidates(target, window, after, limit))).rows;
            },
            async lockFailed(deliveryIds, stored) {
              if (deliveryIds.length === 0) return [];
              return (await run(tx, recoveryQueries.lockFailed(deliveryIds, stored))).rows;
            },
            async insertDeliveries(targetId, rows) {
              if (rows.length === 0) return [];
              return (await run(tx, recoveryQueries.insertDeliveries(targetId, rows))).rows;
            },
            async reset(deliveryIds, needJob, now) {
              if (deliveryIds.length > 0) await run(tx, deliveryHistoryQueries.reset(deliveryIds, needJob, now));
            },
            async record(recovery) {
              await run(tx, recoveryQueries.insertRecovery(recovery));
              if (recovery.deliveries.length > 0) await run(tx, recoveryQueries.tagDeliveries(recovery.id, recovery.deliveries));
            },
          }),
        // A call to Redis stuck while the rows are locked must not keep them.
        { idleTimeoutMs: RECOVERY_TRANSACTION_IDLE_MS },
      );
    },
  };
}

export type RecoveryRepository = ReturnType<typeof recoveryRepository>;
