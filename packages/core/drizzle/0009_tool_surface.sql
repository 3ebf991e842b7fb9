CREATE TABLE "icons" (
	"hash" text PRIMARY KEY NOT NULL,
	"mime_type" text NOT NULL,
	"width" integer NOT NULL,
	"height" integer NOT NULL,
	"bytes" "bytea" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "addons" ADD COLUMN "icons" jsonb;--> statement-breakpoint
ALTER TABLE "tools" ADD COLUMN "output_schema" jsonb;--> statement-breakpoint
ALTER TABLE "tools" ADD COLUMN "idempotent" boolean;--> statement-breakpoint
ALTER TABLE "tools" ADD COLUMN "open_world" boolean;--> statement-breakpoint
ALTER TABLE "tools" ADD COLUMN "icons" jsonb;