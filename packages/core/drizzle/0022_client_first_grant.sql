ALTER TABLE "oauth_clients" ADD COLUMN "first_grant_at" timestamp with time zone;--> statement-breakpoint
UPDATE "oauth_clients" SET "first_grant_at" = "created_at" WHERE EXISTS (SELECT 1 FROM "oauth_grants" WHERE "oauth_grants"."client_id" = "oauth_clients"."id");
