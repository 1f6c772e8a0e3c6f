import { isUuid } from '@herald/domain';
import { Prisma, type PrismaClient } from '../client';
import { DeliveryStatus as STATUS } from '../generated/prisma/enums';

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
  targetId?: string;
  /** Deliveries created at or after this time. */
  createdFrom?: Date;
  /** Deliveries created before this time. */
  createdTo?: Date;
}

/** One delivery (an event for one notification target) and where it stands. */
export interface DeliveryRecord {
  id: string;
  eventId: string;
  targetId: string;
  programId: string;
  merchantId: string | null;
  status: DeliveryStatus;
  /** Attempts made so far, replays included. */
  attemptsMade: number;
  /** HTTP status of the last attempt, when the merchant answered. */
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: Date;
  updatedAt: Date;
  /** When its job was last put in the queue; null while it waits for the sweeper. */
  enqueuedAt: Date | null;
  /** When it succeeded or used its last attempt. */
  completedAt: Date | null;
}

/** One HTTP try of a delivery, as the worker recorded it. */
export interface DeliveryAttemptRecord {
  /** 1 for the first try; replays continue the count. */
  number: number;
  startedAt: Date;
  durationMs: number;
  /** The merchant's HTTP status; null when there was no answer (see errorKind). */
  statusCode: number | null;
  errorKind: string | null;
  errorMessage: string | null;
  /** The first bytes of the merchant's answer. */
  responseBody: string | null;
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

export interface ReplayedDelivery extends DeliveryRecord {
  /** The status before the replay (the delivery is pending now). */
  previousStatus: DeliveryStatus;
  /**
   * True when a job still waits or runs for it and will make the next attempt; false when it needs
   * a new job (enqueuedAt is null until the caller enqueues it, so the sweeper covers a failure).
   */
  jobQueued: boolean;
}

export interface ReplayResult {
  deliveries: ReplayedDelivery[];
  /** More deliveries matched than the limit allowed; replay again to take the next ones. */
  more: boolean;
}

/**
 * Removes the finished jobs of these deliveries, so that their ids are free for new jobs, and says
 * per id whether it is `free` or a job still waits or runs under it (`queued`).
 */
export type FreeJobIds = (deliveryIds: string[]) => Promise<ReadonlyMap<string, 'free' | 'queued'>>;

interface DeliveryRow {
  id: string;
  event_id: string;
  target_id: string;
  program_id: string;
  merchant_id: string | null;
  status: DeliveryStatus;
  attempts_made: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
  enqueued_at: Date | null;
  completed_at: Date | null;
}

const DELIVERY_COLUMNS = Prisma.sql`
  d.id::text AS id, d.event_id, d.target_id::text AS target_id, e.program_id, e.merchant_id, d.status::text AS status,
  d.attempts_made, d.last_status_code, d.last_error, d.created_at, d.updated_at, d.enqueued_at, d.completed_at`;

/** One SQL condition per filter field; the same filter drives lists, counts and replays. */
function whereClause(filter: DeliveryFilter & { id?: string }): Prisma.Sql {
  const conditions: Prisma.Sql[] = [Prisma.sql`TRUE`];
  if (filter.id !== undefined) conditions.push(Prisma.sql`d.id = ${filter.id}::uuid`);
  if (filter.status !== undefined) conditions.push(Prisma.sql`d.status = ${filter.status}::delivery_status`);
  if (filter.programId !== undefined) conditions.push(Prisma.sql`e.program_id = ${filter.programId}`);
  if (filter.merchantId !== undefined) conditions.push(Prisma.sql`e.merchant_id = ${filter.merchantId}`);
  if (filter.eventId !== undefined) conditions.push(Prisma.sql`d.event_id = ${filter.eventId}`);
  if (filter.targetId !== undefined) conditions.push(Prisma.sql`d.target_id = ${filter.targetId}::uuid`);
  if (filter.createdFrom !== undefined) conditions.push(Prisma.sql`d.created_at >= ${filter.createdFrom}`);
  if (filter.createdTo !== undefined) conditions.push(Prisma.sql`d.created_at < ${filter.createdTo}`);
  return Prisma.join(conditions, ' AND ');
}

function toRecord(row: DeliveryRow): DeliveryRecord {
  return {
    id: row.id,
    eventId: row.event_id,
    targetId: row.target_id,
    programId: row.program_id,
    merchantId: row.merchant_id,
    status: row.status,
    attemptsMade: row.attempts_made,
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    enqueuedAt: row.enqueued_at,
    completedAt: row.completed_at,
  };
}

export function deliveryHistoryRepository(prisma: PrismaClient) {
  /** The deliveries matching, with their targets and attempts, in the order given. */
  const details = async (records: DeliveryRecord[]): Promise<DeliveryDetail[]> => {
    if (records.length === 0) return [];
    const ids = records.map((r) => r.id);
    const [targets, attempts] = await Promise.all([
      prisma.notificationTarget.findMany({
        where: { id: { in: [...new Set(records.map((r) => r.targetId))] } },
        select: { id: true, merchantId: true, url: true, enabled: true, deletedAt: true },
      }),
      prisma.deliveryAttempt.findMany({
        where: { deliveryId: { in: ids } },
        orderBy: [{ deliveryId: 'asc' }, { number: 'asc' }],
        select: {
          deliveryId: true,
          number: true,
          startedAt: true,
          durationMs: true,
          statusCode: true,
          errorKind: true,
          errorMessage: true,
          responseBody: true,
        },
      }),
    ]);
    const targetsById = new Map(targets.map((t) => [t.id, t]));
    return records.map((record) => {
      const target = targetsById.get(record.targetId)!;
      return {
        ...record,
        target: { id: target.id, owner: target.merchantId === null ? 'program' : 'merchant', url: target.url, enabled: target.enabled && target.deletedAt === null },
        attempts: attempts.filter((a) => a.deliveryId === record.id).map(({ deliveryId: _, ...attempt }) => attempt),
      };
    });
  };

  return {
    /** A page of the deliveries matching, newest first, and how many match in all. */
    async list(query: DeliveryListQuery): Promise<{ count: number; deliveries: DeliveryRecord[] }> {
      const where = whereClause(query.filter);
      const [rows, [counted]] = await Promise.all([
        prisma.$queryRaw<DeliveryRow[]>`
          SELECT ${DELIVERY_COLUMNS}
          FROM deliveries d JOIN events e ON e.id = d.event_id
          WHERE ${where}
          ORDER BY d.created_at DESC, d.id DESC
          LIMIT ${query.pageSize} OFFSET ${(query.page - 1) * query.pageSize}`,
        prisma.$queryRaw<Array<{ count: bigint }>>`
          SELECT count(*) AS count FROM deliveries d JOIN events e ON e.id = d.event_id WHERE ${where}`,
      ]);
      return { count: Number(counted!.count), deliveries: rows.map(toRecord) };
    },

    /** One delivery with its target and every attempt; null when there is none. */
    async find(deliveryId: string): Promise<DeliveryDetail | null> {
      if (!isUuid(deliveryId)) return null;
      const rows = await prisma.$queryRaw<DeliveryRow[]>`
        SELECT ${DELIVERY_COLUMNS} FROM deliveries d JOIN events e ON e.id = d.event_id WHERE ${whereClause({ id: deliveryId })}`;
      const [detail] = await details(rows.map(toRecord));
      return detail ?? null;
    },

    /** Every delivery of an event, oldest first, with targets and attempts; null when the event does not exist. */
    async listForEvent(eventId: string): Promise<DeliveryDetail[] | null> {
      const [rows, event] = await Promise.all([
        prisma.$queryRaw<DeliveryRow[]>`
          SELECT ${DELIVERY_COLUMNS} FROM deliveries d JOIN events e ON e.id = d.event_id
          WHERE ${whereClause({ eventId })} ORDER BY d.created_at, d.id`,
        prisma.event.findUnique({ where: { id: eventId }, select: { id: true } }),
      ]);
      return event ? details(rows.map(toRecord)) : null;
    },

    /**
     * Sets the selected deliveries back to pending, oldest first, after `freeJobIds` removed their
     * finished jobs. The rows stay locked (FOR UPDATE) meanwhile, so the worker and the sweeper
     * cannot write them in between; if `freeJobIds` fails, nothing changes in the database.
     * Deliveries that need a new job are left with enqueuedAt null: the caller enqueues them once
     * this has committed (the worker skips a job whose delivery still reads as succeeded), and the
     * sweeper does if the caller cannot. A single delivery that does not exist gives no result.
     */
    async replay(selection: ReplaySelection, freeJobIds: FreeJobIds): Promise<ReplayResult> {
      if ('deliveryId' in selection && !isUuid(selection.deliveryId)) return { deliveries: [], more: false };
      const where = whereClause('deliveryId' in selection ? { id: selection.deliveryId } : selection.filter);
      const limit = 'deliveryId' in selection ? 1 : selection.limit;
      return prisma.$transaction(
        async (tx) => {
          // One row past the limit says whether more match; it is locked too, which is harmless.
          const rows = await tx.$queryRaw<DeliveryRow[]>`
            SELECT ${DELIVERY_COLUMNS}
            FROM deliveries d JOIN events e ON e.id = d.event_id
            WHERE ${where}
            ORDER BY d.created_at, d.id
            LIMIT ${limit + 1}
            FOR UPDATE OF d`;
          const records = rows.slice(0, limit).map(toRecord);
          if (records.length === 0) return { deliveries: [], more: false };
          const slots = await freeJobIds(records.map((r) => r.id));
          const free = records.filter((r) => slots.get(r.id) === 'free').map((r) => r.id);
          const queued = records.filter((r) => slots.get(r.id) !== 'free').map((r) => r.id);
          const now = new Date();
          const reset = { status: 'pending', completedAt: null, updatedAt: now } as const;
          await tx.delivery.updateMany({ where: { id: { in: free } }, data: { ...reset, enqueuedAt: null } });
          await tx.delivery.updateMany({ where: { id: { in: queued } }, data: reset });
          return {
            deliveries: records.map((record) => {
              const jobQueued = slots.get(record.id) !== 'free';
              return {
                ...record,
                ...reset,
                enqueuedAt: jobQueued ? record.enqueuedAt : null,
                previousStatus: record.status,
                jobQueued,
              };
            }),
            more: rows.length > limit,
          };
        },
        { timeout: 30_000 },
      );
    },
  };
}

export type DeliveryHistoryRepository = ReturnType<typeof deliveryHistoryRepository>;
