ALTER TABLE "approval_rules" ADD COLUMN "acknowledged_destructive" boolean DEFAULT false NOT NULL;--> statement-breakpoint
-- An allow of a destructive tool could only be set through the warning: those rules acknowledged it.
UPDATE "approval_rules" r SET "acknowledged_destructive" = true WHERE r."mode" = 'allow' AND EXISTS (SELECT 1 FROM "tools" t WHERE t."addon_id" = r."addon_id" AND t."name" = r."tool_name" AND t."destructive");
