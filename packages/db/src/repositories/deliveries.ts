import type { DeliveryRef, RoutingTarget } from '@herald/domain';
import { sqlPool, type PrismaClient } from '../client';
import { inTransaction, type Sql } from '../sql';

/**
 * Deliveries are the outbox between PostgreSQL and the queue. They are created in the transaction
 * that stores their event already marked enqueued (enqueued_at), and their jobs are added after the
 * commit: the common case writes each delivery row once. When adding the jobs fails, the mark is
 * cleared and the sweeper enqueues them; when the process dies in between, the reconciler finds
 * the pending deliveries without a job once RECONCILER_STALE_AFTER_MS has passed.
 */

/** Stores new deliveries already marked enqueued: their jobs are added once the transaction commits. */
export async function insertDeliveries(sql: Sql, refs: readonly DeliveryRef[]): Promise<void> {
  if (refs.length === 0) return;
  await sql.query(
    `INSERT INTO deliveries (id, event_id, target_id, updated_at, enqueued_at)
     SELECT id, event_id, target_id, now(), now() FROM unnest($1::uuid[], $2::text[], $3::uuid[]) AS d(id, event_id, target_id)`,
    [refs.map((r) => r.deliveryId), refs.map((r) => r.eventId), refs.map((r) => r.targetId)],
  );
}

/**
 * The notification targets that may be notified of events of these programs and merchants: each
 * program's own target and each merchant's, switched off and deleted ones included (the routing
 * rule, targetsToNotify, decides). One target per owner, so at most one row per id.
 */
export async function loadRoutingTargets(sql: Sql, programIds: readonly string[], merchantIds: readonly string[]): Promise<RoutingTarget[]> {
  if (programIds.length === 0 && merchantIds.length === 0) return [];
  const { rows } = await sql.query<RoutingTarget>(
    `SELECT id::text AS id, program_id AS "programId", merchant_id AS "merchantId", object_types AS "objectTypes",
            event_types AS "eventTypes", enabled, deleted_at IS NOT NULL AS deleted
     FROM notification_targets
     WHERE (merchant_id IS NULL AND program_id = ANY($1::text[])) OR merchant_id = ANY($2::text[])`,
    [programIds, merchantIds],
  );
  return rows;
}

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

/** What one reconciliation pass did. */
export interface ReconcileResult {
  /** Pending deliveries whose job was looked up in the queue. */
  checked: number;
  /** Those among them that were given a new job. */
  requeued: number;
}

type RefRow = { id: string; event_id: string; target_id: string; program_id: string; merchant_id: string | null };

const toRef = (r: RefRow): DeliveryRef => ({ deliveryId: r.id, eventId: r.event_id, targetId: r.target_id, programId: r.program_id, merchantId: r.merchant_id });

export function deliveryRepository(prisma: PrismaClient) {
  return {
    /** Records that BullMQ holds these deliveries' jobs (replayed deliveries, which start unmarked). */
    async markEnqueued(deliveryIds: readonly string[]): Promise<void> {
      if (deliveryIds.length === 0) return;
      // One statement (updatedAt kept as Prisma's @updatedAt would).
      await sqlPool(prisma).query(
        'UPDATE deliveries SET enqueued_at = now(), updated_at = now() WHERE id = ANY($1::uuid[]) AND enqueued_at IS NULL',
        [deliveryIds],
      );
    },

    /** Hands deliveries whose jobs could not be added to the sweeper: it takes pending ones left unmarked. */
    async clearEnqueued(deliveryIds: readonly string[]): Promise<void> {
      if (deliveryIds.length === 0) return;
      await sqlPool(prisma).query('UPDATE deliveries SET enqueued_at = NULL, updated_at = now() WHERE id = ANY($1::uuid[])', [deliveryIds]);
    },

    /**
     * Enqueues pending deliveries that were never marked enqueued. Rows are locked with SKIP LOCKED
     * while `enqueue` runs, so several sweepers (one per worker process) never take the same rows;
     * jobs use the delivery id as job id, so a delivery enqueued twice still makes one job.
     * Returns how many were enqueued.
     */
    async sweep(options: SweepOptions, enqueue: (refs: DeliveryRef[]) => Promise<void>): Promise<number> {
      return inTransaction(sqlPool(prisma), async (sql) => {
        const { rows } = await sql.query<RefRow>(
          `SELECT d.id::text AS id, d.event_id, d.target_id::text AS target_id, e.program_id, e.merchant_id
           FROM deliveries d JOIN events e ON e.id = d.event_id
           WHERE d.status = 'pending' AND d.enqueued_at IS NULL
             AND d.created_at < now() - make_interval(secs => $1::double precision)
           ORDER BY d.created_at
           LIMIT $2
           FOR UPDATE OF d SKIP LOCKED`,
          [options.graceMs / 1000, options.limit],
        );
        if (rows.length === 0) return 0;
        await enqueue(rows.map(toRef));
        await sql.query('UPDATE deliveries SET enqueued_at = clock_timestamp(), updated_at = now() WHERE id = ANY($1::uuid[])', [rows.map((r) => r.id)]);
        return rows.length;
      });
    },

    /**
     * Finds pending deliveries that were enqueued, and last found alive in the queue, more than
     * `staleMs` ago, seen longest ago first, and hands them to `requeueDead`, which looks up their
     * jobs and gives a new job to each whose job is gone (a Redis that lost its data) or finished
     * while the delivery is still pending (BullMQ failed a job that stalled too often, or the last
     * attempt could not record its outcome); it returns the ids it requeued. Rows stay locked
     * (SKIP LOCKED) meanwhile, so several workers never check the same rows, and the worker's
     * recording of an attempt waits for the pass. Every row checked is stamped, so the next pass
     * moves on to others and a large backlog of deliveries waiting out their backoff is checked in
     * turn, `limit` at a time.
     */
    async reconcile(options: ReconcileOptions, requeueDead: (refs: DeliveryRef[]) => Promise<ReadonlySet<string>>): Promise<ReconcileResult> {
      return inTransaction(sqlPool(prisma), async (sql) => {
        // The (status, enqueued_at) index narrows the scan to pending deliveries; they are few
        // next to the delivered ones, so ordering by the expression needs no index of its own.
        const { rows } = await sql.query<RefRow>(
          `SELECT d.id::text AS id, d.event_id, d.target_id::text AS target_id, e.program_id, e.merchant_id
           FROM deliveries d JOIN events e ON e.id = d.event_id
           WHERE d.status = 'pending'
             AND d.enqueued_at < now() - make_interval(secs => $1::double precision)
             AND coalesce(d.queue_checked_at, d.enqueued_at) < now() - make_interval(secs => $1::double precision)
           ORDER BY coalesce(d.queue_checked_at, d.enqueued_at)
           LIMIT $2
           FOR UPDATE OF d SKIP LOCKED`,
          [options.staleMs / 1000, options.limit],
        );
        if (rows.length === 0) return { checked: 0, requeued: 0 };
        const dead = await requeueDead(rows.map(toRef));
        const requeued = rows.filter((r) => dead.has(r.id)).map((r) => r.id);
        const alive = rows.filter((r) => !dead.has(r.id)).map((r) => r.id);
        // A requeued delivery counts as enqueued now: its new job gets the whole stale period.
        await sql.query(
          `UPDATE deliveries SET queue_checked_at = clock_timestamp(), updated_at = now(),
                  enqueued_at = CASE WHEN id = ANY($2::uuid[]) THEN clock_timestamp() ELSE enqueued_at END
           WHERE id = ANY($1::uuid[]) OR id = ANY($2::uuid[])`,
          [alive, requeued],
        );
        return { checked: rows.length, requeued: requeued.length };
      });
    },
  };
}

export type DeliveryRepository = ReturnType<typeof deliveryRepository>;
