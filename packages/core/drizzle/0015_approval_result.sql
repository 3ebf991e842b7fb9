ALTER TABLE "approvals" ADD COLUMN "result" jsonb;--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "result_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "approvals_result_kept_idx" ON "approvals" USING btree ("result_at") WHERE result is not null;--> statement-breakpoint
CREATE INDEX "approvals_same_call_idx" ON "approvals" USING btree ("user_id","grant_id","tool_name") WHERE status = 'pending' or result is not null or (status = 'allowed' and result_at is null);