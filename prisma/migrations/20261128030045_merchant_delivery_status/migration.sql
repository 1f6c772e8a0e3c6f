-- A merchant's own delivery history filtered by status (GET /deliveries?status=failed, the first
-- thing a merchant with failing callbacks asks): its count and its newest-first page read only its
-- target's deliveries of that status, instead of every delivery of the target in retention.
--
-- Created on the partitioned table, so every week's partition gets it, and the weeks that
-- partition maintenance creates later inherit it. This migration runs in a transaction, so not
-- CONCURRENTLY: writes to deliveries wait while it builds (each week's index is built from that
-- week's rows). Where that is too long, build it beforehand without blocking writes: CREATE INDEX
-- ON ONLY "deliveries" (…) under this name, then per week CREATE INDEX CONCURRENTLY on the
-- partition and ALTER INDEX … ATTACH PARTITION; this statement then leaves it as it is.

-- CreateIndex
CREATE INDEX IF NOT EXISTS "deliveries_target_id_status_created_at_idx" ON "deliveries"("target_id", "status", "created_at");
