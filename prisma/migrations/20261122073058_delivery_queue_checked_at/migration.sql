-- AlterTable
ALTER TABLE "deliveries" ADD COLUMN     "queue_checked_at" TIMESTAMPTZ(3);
