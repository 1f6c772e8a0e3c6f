-- AlterTable
ALTER TABLE "deliveries" ADD COLUMN     "deferrals" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "last_deferral_reason" TEXT,
ADD COLUMN     "last_deferred_at" TIMESTAMPTZ(3);
