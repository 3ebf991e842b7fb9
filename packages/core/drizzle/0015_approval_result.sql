ALTER TABLE "approvals" ADD COLUMN "result" jsonb;--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "result_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "approvals_result_kept_idx" ON "approvals" USING btree ("result_at") WHERE result is not null;