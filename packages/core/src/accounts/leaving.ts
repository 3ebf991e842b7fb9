import { eq, sql } from 'drizzle-orm';
import { z } from 'zod';
import { listRules } from '../approvals/rules';
import { listCalls } from '../calls/call-log';
import type { Ctx } from '../context';
import { personId } from '../context';
import { addons, auditEvents, auditExportCursors, auditHeads, toolSwitches, users } from '../db/schema/index';
import { conflict, unauthorized } from '../errors';
import { inputObject, parseInput } from '../input';
import { listInstalls } from '../installs/installs';
import { listConnections } from '../oauth/grants';
import { pairKeysOf, withCurrentPassword, wrongPassword } from './accounts';
import { listPasskeys } from './passkeys';

/** The call log in an export: the latest this many (the dashboard pages through older ones). */
const EXPORTED_CALLS = 10_000;

/**
 * `GET /api/me/export`: what Toolport keeps of the person, as JSON they can read: the account, its
 * passkeys, the add-ons installed and their tools, rules, the apps let in, and the call log. Secrets (settings'
 * secret values, connected accounts' tokens) are never in it: only that they are set.
 */
export async function exportAccount({ ctx }: { ctx: Ctx }) {
  const userId = personId(ctx);
  const [row] = await ctx.svc.db.select().from(users).where(eq(users.id, userId));
  if (!row) throw unauthorized();
  const calls: unknown[] = [];
  let cursor: string | undefined;
  do {
    const page = await listCalls({ ctx, query: { cursor, limit: 200 } });
    calls.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor && calls.length < EXPORTED_CALLS);
  return {
    exportedAt: ctx.svc.clock.now().toISOString(),
    account: {
      id: row.id,
      email: row.email,
      emailVerified: row.emailVerifiedAt !== null,
      createdAt: row.createdAt.toISOString(),
      aiApps: row.aiApps,
      displayName: row.displayName,
    },
    passkeys: await listPasskeys({ ctx }),
    installs: await listInstalls({ ctx }),
    rules: await listRules({ ctx }),
    apps: await listConnections({ ctx }),
    calls: calls.slice(0, EXPORTED_CALLS),
  };
}

const deleteInput = inputObject({ password: z.string({ message: 'Give your password to delete your account.' }) });
/** `POST /api/me/delete`. */
export type DeleteAccountInput = z.input<typeof deleteInput>;

/**
 * Deletes the account and everything of it: sessions, apps let in (their tokens stop at once),
 * installs, rules, connected accounts and their tokens, push subscriptions, the call log, the audit
 * chain. A person who publishes add-ons deletes them first: others may have installed them.
 */
export async function deleteAccount({ ctx, input }: { ctx: Ctx; input: unknown }) {
  const { password } = parseInput(deleteInput, input, 'Give your password to delete your account.');
  const svc = ctx.svc;
  const userId = personId(ctx);
  const row = await withCurrentPassword(svc, userId, password, { tooMany: () => 'Too many attempts with a wrong password. Try again later.', wrong: wrongPassword() });
  const published = await svc.db.select({ name: addons.name }).from(addons).where(eq(addons.ownerId, userId));
  if (published.length) {
    throw conflict(
      `You publish ${published.length === 1 ? 'an add-on' : `${published.length} add-ons`} (${published.map((a) => a.name).join(', ')}). Delete ${published.length === 1 ? 'it' : 'them'} on the Developers page first: deleting your account would take ${published.length === 1 ? 'it' : 'them'} away from everyone who installed ${published.length === 1 ? 'it' : 'them'}.`,
    );
  }
  // Its events recorded just before are written first, and so deleted with the rest.
  await svc.audit.flushed();
  await svc.db.transaction(async (tx) => {
    // The one table keyed by the person without a foreign key; the rest go with the account.
    await tx.delete(toolSwitches).where(eq(toolSwitches.userId, userId));
    // The person's audit chain is theirs too (the operators' chain keeps its own record).
    await tx.delete(auditEvents).where(eq(auditEvents.chain, userId));
    await tx.delete(auditHeads).where(eq(auditHeads.chain, userId));
    await tx.delete(auditExportCursors).where(eq(auditExportCursors.chain, userId));
    await tx.execute(sql`delete from login_throttle where key = ${`unknown:${row.email}`} or key like ${pairKeysOf(row.email)}`);
    await tx.delete(users).where(eq(users.id, userId));
  });
  // Every process drops what it holds of this person: gates, tokens' grants, tools.
  await svc.changes.changed('gate', { userId });
  await svc.changes.changed('tools', { userId });
  await svc.changes.changed('rules', { userId });
}
