CREATE TABLE "tasks" (
	"id" text PRIMARY KEY NOT NULL,
	"call_id" text NOT NULL,
	"user_id" text NOT NULL,
	"grant_id" text NOT NULL,
	"app_name" text NOT NULL,
	"addon_id" text NOT NULL,
	"addon_name" text NOT NULL,
	"tool_name" text NOT NULL,
	"args_digest" text NOT NULL,
	"output_schema" jsonb,
	"status" text DEFAULT 'working' NOT NULL,
	"status_message" text,
	"result" jsonb,
	"answer_by" timestamp with time zone NOT NULL,
	"accepted_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "tasks_call_id_unique" UNIQUE("call_id")
);
--> statement-breakpoint
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "tasks_user_working_idx" ON "tasks" USING btree ("user_id") WHERE status = 'working';--> statement-breakpoint
CREATE INDEX "tasks_expires_idx" ON "tasks" USING btree ("expires_at");