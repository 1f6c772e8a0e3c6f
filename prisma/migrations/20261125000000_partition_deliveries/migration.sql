-- Deliveries and their attempts become tables partitioned by week of the delivery's created_at
-- (when Herald created the delivery), so that retention (DELIVERY_RETENTION_DAYS) drops whole
-- weeks instead of deleting rows. Prisma cannot describe partitioning: schema.prisma carries the
-- keys this migration creates, and packages/db/src/partitions.ts names and bounds the partitions
-- exactly as below (`<table>_p<YYYYMMDD of the Monday, UTC>`, [Monday, next Monday) UTC).
--
-- PostgreSQL wants the partition key in every primary and unique key, hence (id, created_at) and
-- (event_id, target_id, created_at); delivery_attempts carries its delivery's created_at
-- (delivery_created_at), so that a delivery and its attempts always sit in the same week. The
-- foreign key from attempts to deliveries goes: detaching a referenced week re-checks all its rows
-- under an exclusive lock (see schema.prisma, DeliveryAttempt). The existing rows are moved in this
-- migration's transaction: both tables are locked while it runs.

-- 1. The old tables step aside. Constraint and index names are unique per schema, so theirs go first.
ALTER TABLE "delivery_attempts" DROP CONSTRAINT "delivery_attempts_delivery_id_fkey";
ALTER TABLE "delivery_attempts" DROP CONSTRAINT "delivery_attempts_pkey";
DROP INDEX "delivery_attempts_delivery_id_number_key";
ALTER TABLE "delivery_attempts" RENAME TO "delivery_attempts_unpartitioned";
-- Attempt ids keep counting from where they are.
ALTER SEQUENCE "delivery_attempts_id_seq" OWNED BY NONE;

ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_event_id_fkey";
ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_target_id_fkey";
ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_pkey";
DROP INDEX "deliveries_status_enqueued_at_idx";
DROP INDEX "deliveries_target_id_created_at_idx";
DROP INDEX "deliveries_status_created_at_idx";
DROP INDEX "deliveries_event_id_target_id_key";
ALTER TABLE "deliveries" RENAME TO "deliveries_unpartitioned";

-- 2. The partitioned tables, with the columns of schema.prisma.
CREATE TABLE "deliveries" (
    "id" UUID NOT NULL,
    "event_id" TEXT NOT NULL,
    "target_id" UUID NOT NULL,
    "status" "delivery_status" NOT NULL DEFAULT 'pending',
    "attempts_made" INTEGER NOT NULL DEFAULT 0,
    "last_status_code" INTEGER,
    "last_error" TEXT,
    "enqueued_at" TIMESTAMPTZ(3),
    "queue_checked_at" TIMESTAMPTZ(3),
    "deferrals" INTEGER NOT NULL DEFAULT 0,
    "last_deferred_at" TIMESTAMPTZ(3),
    "last_deferral_reason" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "completed_at" TIMESTAMPTZ(3)
) PARTITION BY RANGE ("created_at");

CREATE TABLE "delivery_attempts" (
    "id" BIGINT NOT NULL DEFAULT nextval('delivery_attempts_id_seq'::regclass),
    "delivery_id" UUID NOT NULL,
    "delivery_created_at" TIMESTAMPTZ(3) NOT NULL,
    "number" INTEGER NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "duration_ms" INTEGER NOT NULL,
    "status_code" INTEGER,
    "error_kind" TEXT,
    "error_message" TEXT,
    "response_body" TEXT,
    "url" TEXT
) PARTITION BY RANGE ("delivery_created_at");
ALTER SEQUENCE "delivery_attempts_id_seq" OWNED BY "delivery_attempts"."id";

-- 3. One partition per week, from the oldest delivery's week to 4 weeks past the current one (the
-- delivery-worker's partition maintenance keeps creating them ahead from then on).
DO $$
DECLARE
  week timestamptz;
  last_week timestamptz;
BEGIN
  SELECT date_trunc('week', coalesce(min("created_at"), now()), 'UTC'),
         date_trunc('week', greatest(coalesce(max("created_at"), now()), now() + interval '4 weeks'), 'UTC')
    INTO week, last_week
    FROM "deliveries_unpartitioned";
  WHILE week <= last_week LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF "deliveries" FOR VALUES FROM (%L) TO (%L)',
                   'deliveries_p' || to_char(week AT TIME ZONE 'UTC', 'YYYYMMDD'), week, week + interval '7 days');
    EXECUTE format('CREATE TABLE %I PARTITION OF "delivery_attempts" FOR VALUES FROM (%L) TO (%L)',
                   'delivery_attempts_p' || to_char(week AT TIME ZONE 'UTC', 'YYYYMMDD'), week, week + interval '7 days');
    week := week + interval '7 days';
  END LOOP;
END $$;

-- 4. The rows move, before the indexes exist (building an index once is cheaper than row by row).
INSERT INTO "deliveries" ("id", "event_id", "target_id", "status", "attempts_made", "last_status_code", "last_error", "enqueued_at",
                          "queue_checked_at", "deferrals", "last_deferred_at", "last_deferral_reason", "created_at", "updated_at", "completed_at")
SELECT "id", "event_id", "target_id", "status", "attempts_made", "last_status_code", "last_error", "enqueued_at",
       "queue_checked_at", "deferrals", "last_deferred_at", "last_deferral_reason", "created_at", "updated_at", "completed_at"
FROM "deliveries_unpartitioned";

INSERT INTO "delivery_attempts" ("id", "delivery_id", "delivery_created_at", "number", "started_at", "duration_ms", "status_code",
                                 "error_kind", "error_message", "response_body", "url")
SELECT a."id", a."delivery_id", d."created_at", a."number", a."started_at", a."duration_ms", a."status_code",
       a."error_kind", a."error_message", a."response_body", a."url"
FROM "delivery_attempts_unpartitioned" a JOIN "deliveries_unpartitioned" d ON d."id" = a."delivery_id";

DROP TABLE "delivery_attempts_unpartitioned";
DROP TABLE "deliveries_unpartitioned";

-- 5. Keys, indexes and foreign keys, as schema.prisma names them (each cascades to every partition).
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_pkey" PRIMARY KEY ("id", "created_at");
CREATE INDEX "deliveries_status_enqueued_at_idx" ON "deliveries"("status", "enqueued_at");
CREATE INDEX "deliveries_target_id_created_at_idx" ON "deliveries"("target_id", "created_at");
CREATE INDEX "deliveries_status_created_at_idx" ON "deliveries"("status", "created_at");
CREATE UNIQUE INDEX "deliveries_event_id_target_id_created_at_key" ON "deliveries"("event_id", "target_id", "created_at");
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_event_id_fkey" FOREIGN KEY ("event_id") REFERENCES "events"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_target_id_fkey" FOREIGN KEY ("target_id") REFERENCES "notification_targets"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

ALTER TABLE "delivery_attempts" ADD CONSTRAINT "delivery_attempts_pkey" PRIMARY KEY ("id", "delivery_created_at");
CREATE UNIQUE INDEX "delivery_attempts_delivery_id_number_delivery_created_at_key" ON "delivery_attempts"("delivery_id", "number", "delivery_created_at");
