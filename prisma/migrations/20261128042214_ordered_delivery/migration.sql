-- AlterTable
ALTER TABLE "deliveries" ADD COLUMN     "waiting_for" UUID;

-- AlterTable
ALTER TABLE "notification_targets" ADD COLUMN     "ordering" TEXT NOT NULL DEFAULT 'none';
