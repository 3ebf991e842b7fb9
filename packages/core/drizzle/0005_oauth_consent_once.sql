ALTER TABLE "oauth_grants" ADD COLUMN "consent_key" text;--> statement-breakpoint
ALTER TABLE "oauth_grants" ADD CONSTRAINT "oauth_grants_consent_key_unique" UNIQUE("consent_key");