ALTER TABLE "addon_versions" ADD COLUMN "tools" jsonb;--> statement-breakpoint
ALTER TABLE "addon_versions" ADD COLUMN "notes" text;--> statement-breakpoint
ALTER TABLE "tool_switches" ADD COLUMN "accepted_version" integer;--> statement-breakpoint
-- Each add-on's current release gets its compiled tools, and every switch accepts the current release.
UPDATE "addon_versions" v SET "tools" = (
  SELECT coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
    'name', t.name, 'title', t.title, 'summary', t.summary, 'destructive', t.destructive, 'readOnly', t.read_only,
    'confirm', t.confirm, 'timeoutSeconds', t.timeout_seconds, 'inputSchema', t.input_schema)) ORDER BY t.position), '[]'::jsonb)
  FROM "tools" t WHERE t.addon_id = v.addon_id)
FROM "addons" a WHERE a.id = v.addon_id AND a.version = v.version;--> statement-breakpoint
UPDATE "tool_switches" s SET "accepted_version" = a.version FROM "addons" a WHERE a.id = s.addon_id;
