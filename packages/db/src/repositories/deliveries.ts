import { storedAtOf, type DeliveryRef, type RoutingTarget } from '@herald/domain';
import type { ExpressionBuilder } from 'kysely';
import type { DB } from '../generated/kysely/schema';
import type { DatabasePool } from '../pool';
import { byShape, db, inTransaction, run, sql, type Sql } from '../sql';
import { EVERY_PARTITION, storedRange, storedWithin, type StoredRange } from '../stored-range';

/**
 * Deliveries are the outbox between PostgreSQL and the queue. They are created in the transaction
 * that stores their event already marked enqueued (enqueued_at), and their jobs are added after the
 * commit: the common case writes each delivery row once. When adding the jobs fails, the mark is
 * cleared and the sweeper enqueues them; when the process dies in between, the reconciler finds
 * the pending deliveries without a job once RECONCILER_STALE_AFTER_MS has passed.
 */

/**
 * The notification targets that may be notified of events of these programs and merchants: each
 * program's own target and each merchant's, switched off and deleted ones included (the routing
 * rule, targetsToNotify, decides). One target per owner, so at most one row per id.
 */
export async function loadRoutingTargets(executor: Sql, programIds: readonly string[], merchantIds: readonly string[]): Promise<RoutingTarget[]> {
  if (programIds.length === 0 && merchantIds.length === 0) return [];
  return (await run(executor, deliveryQueries.routingTargets(programIds, merchantIds))).rows;
}

/** Whose target `t` is, as a DeliveryRef says it. */
const targetOwner = sql<'program' | 'merchant'>`case when t.merchant_id is null then 'program' else 'merchant' end`.as('targetOwner');

/** `ids` as a uuid[] parameter, for `= any(...)`. */
const uuids = (ids: readonly string[]) => sql<string[]>`${ids}::uuid[]`;
/** `now()` minus a number of milliseconds. */
const ago = (ms: number) => sql<Date>`now() - make_interval(secs => ${ms / 1000}::double precision)`;

/**
 * The tenant of delivery `d`'s event, as `e`. Looked up in the month the delivery was stored in
 * (d.created_at is its event's ingested_at: one ingest transaction writes both), so PostgreSQL
 * reads that month's partition only, pruned per row, instead of probing every month kept. Should
 * the two times ever differ, the second branch, which runs only when the first finds nothing, looks
 * in every month: no delivery is left out of a sweep for it.
 */
const eventTenant = (eb: ExpressionBuilder<DB & { d: DB['deliveries'] }, 'd'>) =>
  eb
    .selectFrom('events')
    .select(['program_id', 'merchant_id'])
    .whereRef('events.id', '=', 'd.event_id')
    .whereRef('events.ingested_at', '=', 'd.created_at')
    .unionAll(eb.selectFrom('events').select(['program_id', 'merchant_id']).whereRef('events.id', '=', 'd.event_id'))
    .limit(sql.lit(1))
    .as('e');

/** The ids of a delivery, its event's tenant and its target's owner, as the queue needs them (a DeliveryRef, via refOf): d, e and t joined. */
const REF_COLUMNS = [
  'd.id as deliveryId',
  'd.event_id as eventId',
  'd.target_id as targetId',
  'e.program_id as programId',
  'e.merchant_id as merchantId',
  targetOwner,
  'd.created_at as storedAt',
] as const;

/** A row of REF_COLUMNS as a DeliveryRef. */
function refOf(row: Omit<DeliveryRef, 'storedAt'> & { storedAt: Date }): DeliveryRef {
  return { ...row, storedAt: row.storedAt.toISOString() };
}

const idsOf = (refs: readonly DeliveryRef[]) => refs.map((r) => r.deliveryId);
/** Where refs' deliveries were stored: every partition when a ref does not say (a job written by hand). */
const rangeOf = (refs: readonly DeliveryRef[]) => storedRange(refs.map(storedAtOf));

/** Every statement of the outbox, built from its parameters (the SQL snapshot compiles each). */
export const deliveryQueries = {
  insert: (refs: readonly DeliveryRef[]) =>
    insertStatement('insert', { ids: refs.map((r) => r.deliveryId), eventIds: refs.map((r) => r.eventId), targetIds: refs.map((r) => r.targetId) }),

  routingTargets: (programIds: readonly string[], merchantIds: readonly string[]) => routingTargetsStatement('routing-targets', { programIds, merchantIds }),

  // The statements below that name deliveries by id also name the range they were stored in (their
  // refs' storedAt, or the rows just read): PostgreSQL then reads their weeks only, not every week kept.

  markEnqueued: (deliveryIds: readonly string[], stored: StoredRange = EVERY_PARTITION) =>
    db
      .updateTable('deliveries')
      .set({ enqueued_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
      .where('id', '=', (eb) => eb.fn.any(uuids(deliveryIds)))
      .where(storedWithin('deliveries.created_at', stored))
      .where('enqueued_at', 'is', null),

  clearEnqueued: (deliveryIds: readonly string[], stored: StoredRange = EVERY_PARTITION) =>
    db
      .updateTable('deliveries')
      .set({ enqueued_at: null, updated_at: sql<Date>`now()` })
      .where('id', '=', (eb) => eb.fn.any(uuids(deliveryIds)))
      .where(storedWithin('deliveries.created_at', stored)),

  /** Pending deliveries never marked enqueued, oldest first, locked for this sweeper only. */
  unswept: (options: SweepOptions) =>
    db
      .selectFrom('deliveries as d')
      .innerJoinLateral(eventTenant, (join) => join.onTrue())
      .innerJoin('notification_targets as t', 't.id', 'd.target_id')
      .select(REF_COLUMNS)
      .where('d.status', '=', 'pending')
      .where('d.enqueued_at', 'is', null)
      .where('d.created_at', '<', ago(options.graceMs))
      .orderBy('d.created_at')
      .limit(options.limit)
      .forUpdate('d')
      .skipLocked(),

  swept: (deliveryIds: readonly string[], stored: StoredRange = EVERY_PARTITION) =>
    db
      .updateTable('deliveries')
      .set({ enqueued_at: sql<Date>`clock_timestamp()`, updated_at: sql<Date>`now()` })
      .where('id', '=', (eb) => eb.fn.any(uuids(deliveryIds)))
      .where(storedWithin('deliveries.created_at', stored)),

  /**
   * Pending deliveries enqueued, and last found alive in the queue, longer ago than `staleMs`,
   * seen longest ago first. The (status, enqueued_at) index narrows the scan to pending
   * deliveries; they are few next to the delivered ones, so ordering by the expression needs no
   * index of its own.
   */
  stale: (options: ReconcileOptions) =>
    db
      .selectFrom('deliveries as d')
      .innerJoinLateral(eventTenant, (join) => join.onTrue())
      .innerJoin('notification_targets as t', 't.id', 'd.target_id')
      .select(REF_COLUMNS)
      .where('d.status', '=', 'pending')
      .where('d.enqueued_at', '<', ago(options.staleMs))
      .where((eb) => eb(eb.fn.coalesce('d.queue_checked_at', 'd.enqueued_at'), '<', ago(options.staleMs)))
      .orderBy((eb) => eb.fn.coalesce('d.queue_checked_at', 'd.enqueued_at'))
      .limit(options.limit)
      .forUpdate('d')
      .skipLocked(),

  /** Stamps the checked deliveries; a requeued one counts as enqueued now, so its new job gets the whole stale period. */
  checked: (alive: readonly string[], requeued: readonly string[], stored: StoredRange = EVERY_PARTITION) =>
    db
      .updateTable('deliveries')
      .set((eb) => ({
        queue_checked_at: sql<Date>`clock_timestamp()`,
        updated_at: sql<Date>`now()`,
        enqueued_at: eb
          .case()
          .when('id', '=', eb.fn.any(uuids(requeued)))
          .then(sql<Date>`clock_timestamp()`)
          .else(eb.ref('enqueued_at'))
          .end(),
      }))
      .where((eb) => eb.or([eb('id', '=', eb.fn.any(uuids(alive))), eb('id', '=', eb.fn.any(uuids(requeued)))]))
      .where(storedWithin('deliveries.created_at', stored)),
};

export interface SweepOptions {
  /** Most deliveries handled per sweep. */
  limit: number;
  /** Leave deliveries younger than this to the events-api's own post-commit enqueue. */
  graceMs: number;
}

export interface ReconcileOptions {
  /** Most deliveries checked per pass. */
  limit: number;
  /** Check only deliveries enqueued, and last found alive in the queue, longer ago than this. */
  staleMs: number;
}

/**
 * The outbox's statements on one transaction: rows they lock stay locked until it ends. The
 * reconciler (@herald/outbox) runs its pass on one, since it asks Redis about the rows it holds.
 */
export interface OutboxTransaction {
  /**
   * Locks (SKIP LOCKED) up to `limit` pending deliveries enqueued, and last found alive in the
   * queue, longer ago than `staleMs`, seen longest ago first; returns their refs. Several workers
   * never take the same rows, and the worker's recording of an attempt on one waits.
   */
  lockStale(options: ReconcileOptions): Promise<DeliveryRef[]>;
  /**
   * Stamps every checked delivery, so that the next pass moves on to others; those in `requeued`
   * (by delivery id) count as enqueued now, their new job getting the whole stale period.
   */
  markChecked(checked: readonly DeliveryRef[], requeued: ReadonlySet<string>): Promise<void>;
}

/** How long an outbox transaction may sit idle holding its row locks (waiting on Redis) before PostgreSQL ends it. */
const OUTBOX_TRANSACTION_IDLE_MS = 30_000;

export function deliveryRepository(pool: DatabasePool) {
  return {
    /** Records that BullMQ holds these deliveries' jobs (replayed deliveries, which start unmarked). */
    async markEnqueued(refs: readonly DeliveryRef[]): Promise<void> {
      if (refs.length === 0) return;
      await run(pool, deliveryQueries.markEnqueued(idsOf(refs), rangeOf(refs)));
    },

    /** Hands deliveries whose jobs could not be added to the sweeper: it takes pending ones left unmarked. */
    async clearEnqueued(refs: readonly DeliveryRef[]): Promise<void> {
      if (refs.length === 0) return;
      await run(pool, deliveryQueries.clearEnqueued(idsOf(refs), rangeOf(refs)));
    },

    /**
     * Claims up to `limit` pending deliveries never marked enqueued and older than `graceMs`,
     * oldest first: marks them enqueued and returns their refs, for the caller to add their jobs
     * (and clear the mark if it cannot). The rows are locked (SKIP LOCKED) only while this runs,
     * so several sweepers never claim the same rows, and no lock is held while Redis is asked.
     */
    async claimUnswept(options: SweepOptions): Promise<DeliveryRef[]> {
      return inTransaction(pool, async (tx) => {
        const { rows } = await run(tx, deliveryQueries.unswept(options));
        if (rows.length === 0) return [];
        await run(
          tx,
          deliveryQueries.swept(
            rows.map((r) => r.deliveryId),
            storedRange(rows.map((r) => r.storedAt)),
          ),
        );
        return rows.map(refOf);
      });
    },

    /** Runs `work` on one transaction with the outbox's statements (see OutboxTransaction): committed when it resolves, rolled back when it throws. */
    transaction<T>(work: (tx: OutboxTransaction) => Promise<T>): Promise<T> {
      return inTransaction(
        pool,
        (tx) =>
          work({
            async lockStale(options) {
              return (await run(tx, deliveryQueries.stale(options))).rows.map(refOf);
            },
            async markChecked(checked, requeued) {
              if (checked.length === 0) return;
              const ids = idsOf(checked);
              await run(
                tx,
                deliveryQueries.checked(
                  ids.filter((id) => !requeued.has(id)),
                  ids.filter((id) => requeued.has(id)),
                  rangeOf(checked),
                ),
              );
            },
          }),
        // A call to Redis stuck while the rows are locked must not keep them.
        { idleTimeoutMs: OUTBOX_TRANSACTION_IDLE_MS },
      );
    },
  };
}

export type DeliveryRepository = ReturnType<typeof deliveryRepository>;

// The ingest's statements, built and compiled once each (byShape): every ingest runs both.

const insertStatement = byShape((_shape: 'insert', v: { ids: string[]; eventIds: string[]; targetIds: string[] }) =>
  db
    .insertInto('deliveries')
    .columns(['id', 'event_id', 'target_id', 'updated_at', 'enqueued_at'])
    .expression((eb) =>
      eb
        .selectFrom(
          sql<{ id: string; event_id: string; target_id: string }>`unnest(${v.ids}::uuid[], ${v.eventIds}::text[], ${v.targetIds}::uuid[])`.as<'d'>(
            sql`d(id, event_id, target_id)`,
          ),
        )
        .select(['d.id', 'd.event_id', 'd.target_id', sql<Date>`now()`.as('updated_at'), sql<Date>`now()`.as('enqueued_at')]),
    ),
);

const routingTargetsStatement = byShape((_shape: 'routing-targets', v: { programIds: readonly string[]; merchantIds: readonly string[] }) =>
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
    ])
    .where((eb) =>
      eb.or([
        eb.and([eb('merchant_id', 'is', null), eb('program_id', '=', eb.fn.any(sql<string[]>`${v.programIds}::text[]`))]),
        eb('merchant_id', '=', eb.fn.any(sql<string[]>`${v.merchantIds}::text[]`)),
      ]),
    ),
);
