-- Events become a table partitioned by month of ingested_at, so that retention
-- (EVENT_RETENTION_DAYS) drops whole months instead of deleting rows. The key is ingested_at (when
-- Herald stored the event, by the database's clock), not created_at: producers set created_at, and
-- it can be any time (an old event reported late, a clock off by days), so it could neither bound a
-- month that is complete nor tell when an event has been kept long enough. Prisma cannot describe
-- partitioning: schema.prisma carries the keys this migration creates, and
-- packages/db/src/event-partitions.ts names and bounds the partitions exactly as below
-- (`events_p<YYYYMMDD of the 1st of the month, UTC>`, [1st of the month, 1st of the next) UTC).
--
-- PostgreSQL wants the partition key in every primary and unique key, hence (id, ingested_at). An
-- event id must stay unique across all months (a producer re-posting an id gets the stored event
-- back, or a conflict), which no constraint of a partitioned table can say. So:
-- - each month has its own unique index on id (`events_p<...>_id_key`): within a month, PostgreSQL
--   itself refuses a second row with the same id;
-- - the ingest (packages/db insertNewEvents) first takes a transaction-level advisory lock per id
--   of its batch, in a fixed order, then inserts in a second statement only the ids no month holds
--   yet. That statement's snapshot is taken after the locks are granted, so of two concurrent
--   ingests of one id the second waits for the first to commit and then finds its event, in
--   whichever month it went: around the turn of a month, the two would otherwise land in two
--   partitions whose unique indexes never meet.
--
-- The foreign key from deliveries to events goes: it would have to carry ingested_at, and detaching
-- a referenced month would re-check every delivery under an exclusive lock on both tables. The
-- reference holds by construction (see schema.prisma, Delivery). The existing rows are moved in
-- this migration's transaction: events is locked while it runs.

-- 1. The old table steps aside. Constraint and index names are unique per schema, so the old ones go first.
ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_event_id_fkey";
ALTER TABLE "events" DROP CONSTRAINT "events_program_id_fkey";
ALTER TABLE "events" DROP CONSTRAINT "events_merchant_id_fkey";
ALTER TABLE "events" DROP CONSTRAINT "events_pkey";
DROP INDEX "events_program_id_created_at_id_idx";
DROP INDEX "events_merchant_id_created_at_id_idx";
DROP INDEX "events_program_id_object_type_origin_created_at_id_idx";
DROP INDEX "events_merchant_id_object_type_origin_created_at_id_idx";
DROP INDEX "events_object_id_created_at_idx";
ALTER TABLE "events" RENAME TO "events_unpartitioned";

-- 2. The partitioned table, with the columns of schema.prisma.
CREATE TABLE "events" (
    "id" TEXT NOT NULL,
    "program_id" TEXT NOT NULL,
    "merchant_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "source_system" TEXT,
    "origin" TEXT NOT NULL,
    "event_type" TEXT NOT NULL,
    "object_id" TEXT NOT NULL,
    "object_type" TEXT NOT NULL,
    "metadata" JSONB,
    "data" JSONB,
    "context" TEXT,
    "content_hash" TEXT NOT NULL,
    "ingested_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP
) PARTITION BY RANGE ("ingested_at");

-- 3. One partition per month, from the oldest event's month to 3 months past the current one (the
-- delivery-worker's partition maintenance keeps creating them ahead from then on).
DO $$
DECLARE
  month timestamptz;
  last_month timestamptz;
BEGIN
  SELECT date_trunc('month', coalesce(min("ingested_at"), now()), 'UTC'),
         date_trunc('month', greatest(coalesce(max("ingested_at"), now()), now() + interval '3 months'), 'UTC')
    INTO month, last_month
    FROM "events_unpartitioned";
  WHILE month <= last_month LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF "events" FOR VALUES FROM (%L) TO (%L)',
                   'events_p' || to_char(month AT TIME ZONE 'UTC', 'YYYYMMDD'), month, (month AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC');
    month := (month AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC';
  END LOOP;
END $$;

-- 4. The rows move, before the indexes exist (building an index once is cheaper than row by row).
INSERT INTO "events" ("id", "program_id", "merchant_id", "created_at", "source_system", "origin", "event_type", "object_id",
                      "object_type", "metadata", "data", "context", "content_hash", "ingested_at")
SELECT "id", "program_id", "merchant_id", "created_at", "source_system", "origin", "event_type", "object_id",
       "object_type", "metadata", "data", "context", "content_hash", "ingested_at"
FROM "events_unpartitioned";

DROP TABLE "events_unpartitioned";

-- 5. Keys, indexes and foreign keys, as schema.prisma names them (each cascades to every partition),
-- and each month's own unique index on id (see above).
ALTER TABLE "events" ADD CONSTRAINT "events_pkey" PRIMARY KEY ("id", "ingested_at");
-- The list indexes end with ingested_at: GET /events finds a page's (id, ingested_at) on them, then
-- reads each row from its own month only (the join on the primary key prunes the other partitions).
CREATE INDEX "events_program_id_created_at_id_ingested_at_idx" ON "events"("program_id", "created_at", "id", "ingested_at");
CREATE INDEX "events_merchant_id_created_at_id_ingested_at_idx" ON "events"("merchant_id", "created_at", "id", "ingested_at");
CREATE INDEX "events_program_id_object_type_origin_created_at_id_ingested_idx" ON "events"("program_id", "object_type", "origin", "created_at", "id", "ingested_at");
CREATE INDEX "events_merchant_id_object_type_origin_created_at_id_ingeste_idx" ON "events"("merchant_id", "object_type", "origin", "created_at", "id", "ingested_at");
CREATE INDEX "events_object_id_created_at_idx" ON "events"("object_id", "created_at");
ALTER TABLE "events" ADD CONSTRAINT "events_program_id_fkey" FOREIGN KEY ("program_id") REFERENCES "programs"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "events" ADD CONSTRAINT "events_merchant_id_fkey" FOREIGN KEY ("merchant_id") REFERENCES "merchants"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

DO $$
DECLARE
  partition text;
BEGIN
  FOR partition IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = '"events"'::regclass LOOP
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I ("id")', partition || '_id_key', partition);
  END LOOP;
END $$;
