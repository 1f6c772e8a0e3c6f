-- How an OAuth target's token is requested (spec | form) and the scope it asks for. Existing OAuth
-- targets keep the spec's request, which is what they were sent until now.
ALTER TABLE "notification_targets" ADD COLUMN "token_request" TEXT,
ADD COLUMN "oauth_scope" TEXT;

UPDATE "notification_targets" SET "token_request" = 'spec' WHERE "auth_mode" = 'oauth';
