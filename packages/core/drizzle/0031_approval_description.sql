ALTER TABLE "approvals" ADD COLUMN "confirm_missing" text;--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "destructive" boolean DEFAULT false NOT NULL;