-- A target's delivery health, kept by the delivery-worker with each batch of attempts, and why a
-- target is switched off: `auto-disabled` when every attempt failed for TARGET_AUTO_DISABLE_AFTER.
ALTER TABLE "notification_targets"
  ADD COLUMN "disabled_reason" TEXT,
  ADD COLUMN "disabled_at" TIMESTAMPTZ(3),
  ADD COLUMN "last_success_at" TIMESTAMPTZ(3),
  ADD COLUMN "failing_since" TIMESTAMPTZ(3);
