-- CreateTable
CREATE TABLE "event_bucket_counts" (
    "scope" TEXT NOT NULL,
    "origin" TEXT NOT NULL,
    "object_type" TEXT NOT NULL,
    "granularity" INTEGER NOT NULL,
    "bucket_start" BIGINT NOT NULL,
    "count" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "event_bucket_counts_pkey" PRIMARY KEY ("scope","origin","object_type","granularity","bucket_start")
);
