CREATE TABLE "service_secrets" (
	"name" text PRIMARY KEY NOT NULL,
	"value_enc" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "approvals_pending_expiry_idx" ON "approvals" USING btree ("expires_at") WHERE status = 'pending';