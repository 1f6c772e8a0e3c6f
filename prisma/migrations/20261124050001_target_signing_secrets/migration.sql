-- AlterTable
-- Existing targets keep NULL secrets: each one's secret is generated, encrypted under SECRETS_KEY,
-- when it is first needed (its next callback, or an admin's first read or rotation of it).
ALTER TABLE "notification_targets" ADD COLUMN     "signing_grace_ends_at" TIMESTAMPTZ(3),
ADD COLUMN     "signing_key_id" TEXT,
ADD COLUMN     "signing_secrets" TEXT;
