CREATE TABLE "audit_events" (
	"chain" text NOT NULL,
	"seq" bigint NOT NULL,
	"kind" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"event" text NOT NULL,
	CONSTRAINT "audit_events_chain_seq_pk" PRIMARY KEY("chain","seq")
);
--> statement-breakpoint
CREATE TABLE "audit_heads" (
	"chain" text PRIMARY KEY NOT NULL,
	"seq" bigint NOT NULL,
	"hash" text NOT NULL
);
