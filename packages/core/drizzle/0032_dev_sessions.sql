CREATE TABLE "dev_sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"addon_id" text NOT NULL,
	"user_id" text NOT NULL,
	"key_id" text,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "dev_sessions" ADD CONSTRAINT "dev_sessions_addon_id_addons_id_fk" FOREIGN KEY ("addon_id") REFERENCES "public"."addons"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "dev_sessions" ADD CONSTRAINT "dev_sessions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "dev_sessions" ADD CONSTRAINT "dev_sessions_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "dev_sessions_addon_idx" ON "dev_sessions" USING btree ("addon_id");