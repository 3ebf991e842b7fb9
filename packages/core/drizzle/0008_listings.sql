ALTER TABLE "users" ADD COLUMN "display_name" text;--> statement-breakpoint
ALTER TABLE "addons" ADD COLUMN "listing" text;--> statement-breakpoint
ALTER TABLE "addons" ADD COLUMN "listing_reason" text;--> statement-breakpoint
ALTER TABLE "addons" ADD COLUMN "listing_changed_at" timestamp with time zone;--> statement-breakpoint
-- Add-ons listed before listings were reviewed stay listed.
UPDATE "addons" SET "listing" = 'approved', "listing_changed_at" = now() WHERE "visibility" = 'public';
