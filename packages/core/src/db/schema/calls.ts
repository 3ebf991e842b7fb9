import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { users } from './accounts';
import { oauthGrants } from './oauth';
import { bytea } from './addons';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const approvals = pgTable(
  'approvals',
  {
    id: text('id').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    callId: text('call_id').notNull().unique(),
    grantId: text('grant_id'),
    appName: text('app_name').notNull(),
    addonId: text('addon_id').notNull(),
    toolName: text('tool_name').notNull(),
    /** The exact JSON text that will be sent if allowed. */
    arguments: text('arguments').notNull(),
    confirm: jsonb('confirm'),
    /** Why the add-on's description is missing, for a tool that has one: `slow` or `failed`. */
    confirmMissing: text('confirm_missing', { enum: ['slow', 'failed'] }),
    /** The tool was destructive when the app called it: the card says so even without a description. */
    destructive: boolean('destructive').notNull().default(false),
    status: text('status', { enum: ['pending', 'allowed', 'denied', 'dismissed', 'expired', 'cancelled', 'revoked'] })
      .notNull()
      .default('pending'),
    decidedBy: text('decided_by'),
    decidedAt: ts('decided_at'),
    /** The person's reason for a deny (plain text, bounded): passed to the model in the tool error. */
    reason: text('reason'),
    expiresAt: ts('expires_at').notNull(),
    /** Once its approval_holders lease lapses nothing can run the call, so an allow is refused. */
    holderId: text('holder_id'),
    /** Legacy per-row lease: honoured where set; new rows leave it null. */
    heldUntil: ts('held_until'),
    /**
     * What a held call answered, so a 2026-07-28 retry or a repeat of the call gets that answer in
     * any process (approvals/held.ts); cleared by the sweep after RESULT_KEPT_MINUTES.
     */
    result: jsonb('result'),
    resultAt: ts('result_at'),
    /** The app's session as the add-on sees it (`call.session`), for whichever process delivers the call. */
    session: text('session'),
    /**
     * Who finishes the decided call: its holder, or a process that took it over after the holder
     * was gone (calls/call-tool.ts finishOrphans). Set once, by one conditional update.
     */
    runBy: text('run_by'),
    runAt: ts('run_at'),
    /** Its holder claims before it runs the call, so another process may take it over (older releases' holders do not). */
    takeover: boolean('takeover').notNull().default(false),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [
    index('approvals_user_status_idx').on(t.userId, t.status),
    // The expiry sweeper reads only pending rows, however large the table grows.
    index('approvals_pending_expiry_idx').on(t.expiresAt).where(sql`status = 'pending'`),
    // The sweep clears kept answers past their time; only rows holding one are read.
    index('approvals_result_kept_idx').on(t.resultAt).where(sql`result is not null`),
    // A repeat of a call (approvals/held.ts findSameCall) looks among the open and the recently answered only.
    index('approvals_same_call_idx')
      .on(t.userId, t.grantId, t.toolName)
      .where(sql`status = 'pending' or result is not null or (status = 'allowed' and result_at is null)`),
    // Decided calls nobody has taken to finish yet: the sweep looks only here for a holder's orphans.
    index('approvals_unrun_idx').on(t.decidedAt).where(sql`run_by is null and status <> 'pending' and takeover`),
  ],
);

/** grant_id null: every app; an app's rule wins. `allow` is never set for an alwaysAsk tool. */
export const approvalRules = pgTable(
  'approval_rules',
  {
    id: text('id').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    addonId: text('addon_id').notNull(),
    toolName: text('tool_name').notNull(),
    /** Null: the rule applies to every app of the person. */
    grantId: text('grant_id').references(() => oauthGrants.id, { onDelete: 'cascade' }),
    mode: text('mode', { enum: ['ask_every_time', 'ask', 'allow', 'never'] }).notNull(),
    /** A time-limited allow ends here; null: until the person removes the rule. */
    expiresAt: ts('expires_at'),
    /** Without it an allow applies only while the tool is not destructive. */
    acknowledgedDestructive: boolean('acknowledged_destructive').notNull().default(false),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('approval_rules_one_per_scope').on(t.userId, t.addonId, t.toolName, sql`coalesce(${t.grantId}, '')`),
    index('approval_rules_user_idx').on(t.userId),
  ],
);

/** One row per API process holding waiting approvals: its lease, renewed in one statement. */
export const approvalHolders = pgTable('approval_holders', {
  id: text('id').primaryKey(),
  heldUntil: ts('held_until').notNull(),
});

export const calls = pgTable(
  'calls',
  {
    id: text('id').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    grantId: text('grant_id'),
    appName: text('app_name').notNull(),
    addonId: text('addon_id').notNull(),
    toolName: text('tool_name').notNull(),
    argsDigest: text('args_digest').notNull(),
    decision: text('decision'),
    decidedBy: text('decided_by'),
    outcome: text('outcome').notNull(),
    detail: text('detail'),
    /** A failed call: whether it may have reached its add-on (false: certainly not); null: not known. */
    sent: boolean('sent'),
    latencyMs: integer('latency_ms').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [
    index('calls_user_created_idx').on(t.userId, t.createdAt.desc(), t.id.desc()),
    // Calls still at their add-on (calls/running.ts): a person's Running now, and the sweep of the lost.
    index('calls_running_idx').on(t.userId).where(sql`outcome = 'running'`),
    // Retention removes by age across everyone (calls/retention.ts). Rows arrive in time order, so a
    // BRIN index finds them for almost nothing per insert, where a b-tree would cost every call.
    index('calls_created_brin').using('brin', t.createdAt),
  ],
);

export const deliveries = pgTable(
  'deliveries',
  {
    id: text('id').primaryKey(),
    addonId: text('addon_id').notNull(),
    callId: text('call_id').notNull(),
    type: text('type').notNull(),
    attempt: integer('attempt').notNull(),
    /** The add-on's pseudonymous id for the person; never the real one. */
    subject: text('subject'),
    status: integer('status'),
    latencyMs: integer('latency_ms').notNull(),
    errorClass: text('error_class'),
    detail: text('detail'),
    createdAt: ts('created_at').notNull().defaultNow(),
    meta: jsonb('meta'),
  },
  (t) => [
    index('deliveries_addon_created_idx').on(t.addonId, t.createdAt.desc()),
    // A call's own page reads its attempts, however long it ran and however busy its add-on.
    index('deliveries_call_idx').on(t.callId),
    index('deliveries_created_brin').using('brin', t.createdAt),
  ],
);

/**
 * A tool call that outlives its request (MCP Tasks, calls/tasks.ts): created before the app hears
 * of it, so any process can answer `tasks/get`, and finished by whichever process hears the answer.
 */
export const tasks = pgTable(
  'tasks',
  {
    /** `task_` and 32 random characters: unguessable, and shown only to the grant that made it. */
    id: text('id').primaryKey(),
    callId: text('call_id').notNull().unique(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    grantId: text('grant_id').notNull(),
    appName: text('app_name').notNull(),
    addonId: text('addon_id').notNull(),
    /** For the sentence of a call its add-on never answered. */
    addonName: text('addon_name').notNull(),
    toolName: text('tool_name').notNull(),
    argsDigest: text('args_digest').notNull(),
    /** The tool's outputSchema when the call was made: a later answer is checked against it. */
    outputSchema: jsonb('output_schema'),
    status: text('status', { enum: ['working', 'completed', 'failed', 'cancelled'] }).notNull().default('working'),
    /** Where a working call is (queued, at the add-on, accepted), or the add-on's last progress. */
    statusMessage: text('status_message'),
    /** The CallToolResult once completed. */
    result: jsonb('result'),
    /** When the add-on's answer is due: after it, the task completes with a tool error. */
    answerBy: ts('answer_by').notNull(),
    /** The add-on accepted the call and answers later (its answer URL). */
    acceptedAt: ts('accepted_at'),
    /** How it ended: answered, cancelled, overdue, lost (never taken) or failed (Toolport's side). */
    endReason: text('end_reason'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    /** After this the task is gone (ttlMs from creation). */
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [
    // A person's open tasks are counted against their limit; the sweep reads only those past due.
    index('tasks_user_working_idx').on(t.userId).where(sql`status = 'working'`),
    index('tasks_expires_idx').on(t.expiresAt),
  ],
);

/**
 * Files an add-on returned with a call's answer (or the whole of a text answer too large to give
 * inline): readable by the app that made the call (`resources/read`) until they expire.
 */
export const artifacts = pgTable(
  'artifacts',
  {
    id: text('id').primaryKey(),
    callId: text('call_id').notNull(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    grantId: text('grant_id').notNull().references(() => oauthGrants.id, { onDelete: 'cascade' }),
    addonId: text('addon_id').notNull(),
    name: text('name').notNull(),
    mediaType: text('media_type').notNull(),
    size: integer('size').notNull(),
    bytes: bytea('bytes').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [index('artifacts_expires_idx').on(t.expiresAt), index('artifacts_user_idx').on(t.userId, t.createdAt)],
);
