ALTER TABLE "connected_accounts" ADD COLUMN "token_url" text;--> statement-breakpoint
ALTER TABLE "connected_accounts" ADD COLUMN "revocation_url" text;