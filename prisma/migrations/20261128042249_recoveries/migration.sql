-- Merchants' recoveries (POST /deliveries/recover) and the deliveries each queued. New tables only:
-- nothing existing is locked or rewritten.

-- CreateTable
CREATE TABLE "recoveries" (
    "id" UUID NOT NULL,
    "target_id" UUID NOT NULL,
    "owner_key" TEXT NOT NULL,
    "from_time" TIMESTAMPTZ(3) NOT NULL,
    "to_time" TIMESTAMPTZ(3) NOT NULL,
    "covered_to" TIMESTAMPTZ(3) NOT NULL,
    "queued" INTEGER NOT NULL,
    "created" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),
    "sent" INTEGER,
    "delivered" INTEGER,
    "failed" INTEGER,

    CONSTRAINT "recoveries_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "recovery_deliveries" (
    "recovery_id" UUID NOT NULL,
    "delivery_id" UUID NOT NULL,
    "delivery_created_at" TIMESTAMPTZ(3) NOT NULL,
    "attempts_before" INTEGER NOT NULL,

    CONSTRAINT "recovery_deliveries_pkey" PRIMARY KEY ("recovery_id","delivery_id")
);

-- CreateIndex
CREATE INDEX "recoveries_target_id_finished_at_idx" ON "recoveries"("target_id", "finished_at");

-- AddForeignKey
ALTER TABLE "recoveries" ADD CONSTRAINT "recoveries_target_id_fkey" FOREIGN KEY ("target_id") REFERENCES "notification_targets"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "recovery_deliveries" ADD CONSTRAINT "recovery_deliveries_recovery_id_fkey" FOREIGN KEY ("recovery_id") REFERENCES "recoveries"("id") ON DELETE CASCADE ON UPDATE CASCADE;
