CREATE INDEX "calls_created_brin" ON "calls" USING brin ("created_at");--> statement-breakpoint
CREATE INDEX "deliveries_created_brin" ON "deliveries" USING brin ("created_at");