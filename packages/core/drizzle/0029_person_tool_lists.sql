CREATE TABLE "person_tool_lists" (
	"user_id" text NOT NULL,
	"addon_id" text NOT NULL,
	"subject" text NOT NULL,
	"basis" text NOT NULL,
	"tools" jsonb NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"asked_at" timestamp with time zone NOT NULL,
	CONSTRAINT "person_tool_lists_user_id_addon_id_pk" PRIMARY KEY("user_id","addon_id")
);
--> statement-breakpoint
ALTER TABLE "person_tool_lists" ADD CONSTRAINT "person_tool_lists_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "person_tool_lists" ADD CONSTRAINT "person_tool_lists_addon_id_addons_id_fk" FOREIGN KEY ("addon_id") REFERENCES "public"."addons"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "person_tool_lists_subject_idx" ON "person_tool_lists" USING btree ("addon_id","subject");