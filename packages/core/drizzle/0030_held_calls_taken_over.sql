ALTER TABLE "approvals" ADD COLUMN "session" text;--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "run_by" text;--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "run_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "takeover" boolean DEFAULT false NOT NULL;--> statement-breakpoint
CREATE INDEX "approvals_unrun_idx" ON "approvals" USING btree ("decided_at") WHERE run_by is null and status <> 'pending' and takeover;