-- Event ids stay unique across monthly partitions without a lock per id. Each month has its own
-- unique index on id, which decides between two ingests of one id only when both store into the
-- same month. This row names that month: an ingest holds one advisory lock on it shared and
-- stores only when its own ingested_at falls in this month; the first ingest of a new month
-- advances the row under the same lock exclusive, which waits for every ingest still storing into
-- the old month to commit (packages/db insertNewEvents). Before, an ingest held one advisory lock
-- per event of its batch until it committed, so that a few concurrent batches of 1,000 could fill
-- PostgreSQL's shared lock table, for every client of the server.

-- CreateTable
CREATE TABLE "event_ingest_month" (
    "only" BOOLEAN NOT NULL DEFAULT true,
    "month" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "event_ingest_month_pkey" PRIMARY KEY ("only")
);

-- The month of the database's clock now, as ingested_at rounds it (milliseconds).
INSERT INTO "event_ingest_month" ("month") VALUES (date_trunc('month', CURRENT_TIMESTAMP::timestamptz(3), 'UTC'));
