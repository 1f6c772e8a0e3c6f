-- AlterTable
ALTER TABLE "delivery_attempts" ADD COLUMN     "url" TEXT;
