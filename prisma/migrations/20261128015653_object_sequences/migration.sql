-- Every event gets `sequence`: its place among the events of its object (same program, merchant,
-- objectType and objectId), from 1, in the order the ingest stored them. object_sequences keeps each
-- object's last number; the ingest locks an object's row, numbers its new events after it and moves
-- it on in the same transaction (packages/db insertNewEvents), so numbers are gap-free and unique
-- under concurrent ingests.
--
-- Events stored before this migration are numbered here, by when they were stored, then by
-- createdAt, then by id: the order of the events of one batch was not kept, and within one batch
-- (one ingested_at) this is the best order left. events is locked while this runs.

-- CreateTable
CREATE TABLE "object_sequences" (
    "program_id" TEXT NOT NULL,
    "merchant_id" TEXT NOT NULL,
    "object_type" TEXT NOT NULL,
    "object_id" TEXT NOT NULL,
    "last_sequence" INTEGER NOT NULL,

    CONSTRAINT "object_sequences_pkey" PRIMARY KEY ("program_id","merchant_id","object_type","object_id")
);

-- AlterTable: the column is filled before it becomes NOT NULL.
ALTER TABLE "events" ADD COLUMN "sequence" INTEGER;

UPDATE "events" AS e
SET "sequence" = numbered."sequence"
FROM (
    SELECT "id", "ingested_at",
           row_number() OVER (PARTITION BY "program_id", coalesce("merchant_id", ''), "object_type", "object_id"
                              ORDER BY "ingested_at", "created_at", "id") AS "sequence"
    FROM "events"
) AS numbered
WHERE e."id" = numbered."id" AND e."ingested_at" = numbered."ingested_at";

INSERT INTO "object_sequences" ("program_id", "merchant_id", "object_type", "object_id", "last_sequence")
SELECT "program_id", coalesce("merchant_id", ''), "object_type", "object_id", max("sequence")
FROM "events"
GROUP BY "program_id", coalesce("merchant_id", ''), "object_type", "object_id";

ALTER TABLE "events" ALTER COLUMN "sequence" SET NOT NULL;

-- CreateIndex
CREATE INDEX "events_object_id_object_type_sequence_idx" ON "events"("object_id", "object_type", "sequence");
