-- AlterTable
ALTER TABLE "notification_targets" ADD COLUMN     "delivery_policy" JSONB;
