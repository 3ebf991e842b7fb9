CREATE TABLE "approval_rules" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"addon_id" text NOT NULL,
	"tool_name" text NOT NULL,
	"grant_id" text,
	"mode" text NOT NULL,
	"expires_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "tools" ADD COLUMN "always_ask" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "oauth_grants" ADD COLUMN "tools" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "oauth_grants" ADD COLUMN "new_tools" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "oauth_grants" ADD COLUMN "url_elicitation" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "reason" text;--> statement-breakpoint
ALTER TABLE "approval_rules" ADD CONSTRAINT "approval_rules_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "approval_rules" ADD CONSTRAINT "approval_rules_grant_id_oauth_grants_id_fk" FOREIGN KEY ("grant_id") REFERENCES "public"."oauth_grants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "approval_rules_one_per_scope" ON "approval_rules" USING btree ("user_id","addon_id","tool_name",coalesce("grant_id", ''));--> statement-breakpoint
CREATE INDEX "approval_rules_user_idx" ON "approval_rules" USING btree ("user_id");--> statement-breakpoint
-- Grants made before per-app choices let the app use every switched-on tool: keep exactly that.
UPDATE "oauth_grants" g SET "new_tools" = true, "tools" = coalesce((SELECT jsonb_agg(s."addon_id" || '__' || s."tool_name" ORDER BY s."addon_id", s."tool_name") FROM "tool_switches" s WHERE s."user_id" = g."user_id" AND s."enabled"), '[]'::jsonb);
