CREATE TABLE "approval_holders" (
	"id" text PRIMARY KEY NOT NULL,
	"held_until" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "holder_id" text;