import { and, eq, isNull, sql, type SQL } from 'drizzle-orm';
import { z } from 'zod';
import type { Ctx } from '../context';
import { personId } from '../context';
import { oauthGrants } from '../db/schema/index';
import { notFound, validation } from '../errors';
import { inputObject, parseInput } from '../input';
import type { Services } from '../services';
import { switchedOnTools, type EnabledTool } from '../calls/enabled-tools';
import { executedRows } from '../db/client';

/*
 * A tool switched on later is not added to an app let in before, unless the person ticked "Also let
 * it use tools I switch on later": consent is to what the person saw.
 */

type Tx = Parameters<Parameters<Services['db']['transaction']>[0]>[0];

/** An app may be given at most this many tools in one choice (more than anyone switches on). */
const MAX_CHOSEN_TOOLS = 4096;
/** How many refused names a sentence quotes, each cut to 80 characters. */
const NAMED_AT_MOST = 5;

/** The tools a person can give an app, grouped by add-on as the consent page and the Apps page show them. */
export interface ChoosableAddon {
  id: string;
  name: string;
  tools: Array<{ name: string; title: string; destructive: boolean }>;
}

export function choosableAddons(list: EnabledTool[]): ChoosableAddon[] {
  const byAddon = new Map<string, ChoosableAddon>();
  for (const t of list) {
    let addon = byAddon.get(t.addonId);
    if (!addon) byAddon.set(t.addonId, (addon = { id: t.addonId, name: t.addonName, tools: [] }));
    addon.tools.push({ name: t.mcpName, title: t.title, destructive: t.destructive });
  }
  return [...byAddon.values()];
}

/** `"a", "b" and 3 more`: the app's or the form's own text, cut, for a sentence. */
function quoted(names: string[]): string {
  const shown = names.slice(0, NAMED_AT_MOST).map((n) => `"${n.length > 80 ? `${n.slice(0, 80)}…` : n}"`);
  const more = names.length - shown.length;
  if (more > 0) return `${shown.join(', ')} and ${more} more`;
  return shown.length > 1 ? `${shown.slice(0, -1).join(', ')} and ${shown.at(-1)}` : shown[0] ?? '';
}

const notSwitchedOn = (names: string[]) =>
  `${quoted(names)} ${names.length === 1 ? 'is not one of the tools' : 'are not among the tools'} you have switched on`;

export type ToolChoiceRead =
  | { ok: true; tools: string[]; newTools: boolean; askEveryTool: boolean }
  | { ok: false; message: string; ticked: ReadonlySet<string>; newTools: boolean; askEveryTool: boolean };

/** A box of the consent page: unticked, or sent once as `yes`; anything else is not this page's. */
function box(form: URLSearchParams, name: string): boolean | undefined {
  const sent = form.getAll(name);
  if (!sent.length) return false;
  return sent.length === 1 && sent[0] === 'yes' ? true : undefined;
}

/** Any unknown or repeated tool refuses the whole form: nothing is made. */
export function readConsentChoice(form: URLSearchParams, switchedOn: EnabledTool[]): ToolChoiceRead {
  const sent = form.getAll('tool');
  const on = new Set(switchedOn.map((t) => t.mcpName));
  const ticked = new Set(sent.filter((n) => on.has(n)));
  const newToolsSent = box(form, 'new_tools');
  const askSent = box(form, 'ask_every_tool');
  const newTools = newToolsSent ?? false;
  const askEveryTool = askSent ?? false;
  const refuse = (message: string): ToolChoiceRead => ({ ok: false, message: `${message}, so the app was not let in. Choose again below.`, ticked, newTools, askEveryTool });
  if (newToolsSent === undefined) return refuse('The form answered "Also let it use tools I switch on later" in a way this page never sends');
  if (askSent === undefined) return refuse('The form answered "Ask me before every tool call it makes" in a way this page never sends');
  if (sent.length > on.size) return refuse(`The form names ${sent.length} tools and you have ${on.size} switched on`);
  const unknown = sent.filter((n) => !on.has(n));
  if (unknown.length) return refuse(`The form names tools you do not have: ${notSwitchedOn(unknown)}`);
  if (ticked.size !== sent.length) return refuse('The form names a tool more than once');
  return { ok: true, tools: switchedOn.filter((t) => ticked.has(t.mcpName)).map((t) => t.mcpName), newTools, askEveryTool };
}

const askInput = inputObject({ askEveryTool: z.boolean({ message: 'Say true or false: whether every tool call of this app asks you first.' }) });
/** `PUT /api/connections/{id}/ask`. */
export type ConnectionAskInput = z.input<typeof askInput>;

/** Whether every tool call of this app asks the person first, whatever the tool and their rules. */
export async function setConnectionAsk({ ctx, id, input }: { ctx: Ctx; id: string; input: unknown }): Promise<{ askEveryTool: boolean }> {
  const userId = personId(ctx);
  const { askEveryTool } = parseInput(askInput, input, 'Send {"askEveryTool": true}.');
  const [done] = await ctx.svc.db
    .update(oauthGrants)
    .set({ askEveryTool })
    .where(and(eq(oauthGrants.id, id), eq(oauthGrants.userId, userId), isNull(oauthGrants.revokedAt)))
    .returning({ id: oauthGrants.id });
  if (!done) throw notFound('That connection');
  await ctx.svc.changes.changed('gate', { userId, grantId: id });
  return { askEveryTool };
}

const TOOLS_LIST = 'Give tools as a list of tool names such as "notes__add_note".';
const choiceInput = inputObject({
  tools: z
    .array(z.string({ message: TOOLS_LIST }).max(64, 'A tool name has at most 64 characters.'), { message: TOOLS_LIST })
    .max(MAX_CHOSEN_TOOLS, `Choose at most ${MAX_CHOSEN_TOOLS} tools.`),
  newTools: z.boolean({ message: 'Say true or false: whether this app also gets the tools you switch on later.' }),
});
/** `PUT /api/connections/{id}/tools`, and its answer. */
export type ConnectionToolsInput = z.input<typeof choiceInput>;
export type ConnectionTools = Awaited<ReturnType<typeof setConnectionTools>>;

/**
 * A given tool that is switched off now is not on the page, so it stays given: switched on again,
 * it is back for this app.
 */
export async function setConnectionTools({ ctx, id, input }: { ctx: Ctx; id: string; input: unknown }): Promise<{ tools: string[]; newTools: boolean }> {
  const userId = personId(ctx);
  const { tools, newTools } = parseInput(choiceInput, input, 'Send {"tools": ["notes__add_note"], "newTools": false}.');
  const switchedOn = await switchedOnTools(ctx.svc, userId);
  const on = new Set(switchedOn.map((t) => t.mcpName));
  const unknown = tools.map((name, i) => ({ name, i })).filter(({ name }) => !on.has(name));
  if (unknown.length) {
    throw validation(
      `${notSwitchedOn(unknown.map((u) => u.name))}, so nothing was changed.`,
      unknown.map(({ i }) => ({ path: `/tools/${i}`, message: 'Not one of your switched-on tools.' })),
    );
  }
  const chosen = new Set(tools);
  if (chosen.size !== tools.length) {
    const seen = new Set<string>();
    const twice = tools.map((name, i) => ({ name, i })).filter(({ name }) => seen.has(name) || !seen.add(name));
    throw validation(`${quoted([...new Set(twice.map((t) => t.name))])} is named more than once, so nothing was changed.`, twice.map(({ i }) => ({ path: `/tools/${i}`, message: 'Named twice.' })));
  }
  const ordered = switchedOn.filter((t) => chosen.has(t.mcpName)).map((t) => t.mcpName);
  const changed = await ctx.svc.db.transaction(async (tx) => {
    const [grant] = await tx
      .select({ tools: oauthGrants.tools })
      .from(oauthGrants)
      .where(and(eq(oauthGrants.id, id), eq(oauthGrants.userId, userId), isNull(oauthGrants.revokedAt)))
      .for('update');
    if (!grant) return false;
    const keptOff = grant.tools.filter((n) => !on.has(n));
    await tx.update(oauthGrants).set({ tools: [...ordered, ...keptOff], newTools }).where(eq(oauthGrants.id, id));
    return true;
  });
  if (!changed) throw notFound('That connection');
  await ctx.svc.changes.changed('gate', { userId, grantId: id });
  return { tools: ordered, newTools };
}


/**
 * Tools just switched on join every live app of the person that asked for later tools
 * (`new_tools`), inside the switch's transaction. Returns whether any app got one.
 */
export async function giveNewTools(tx: Tx, userId: string, names: string[]): Promise<boolean> {
  if (!names.length) return false;
  const rows = await tx.execute(sql`
    update ${oauthGrants} set tools = ${oauthGrants.tools} || coalesce(
      (select jsonb_agg(t.n order by t.i) from jsonb_array_elements_text(${JSON.stringify(names)}::jsonb) with ordinality as t(n, i)
        where not ${oauthGrants.tools} @> jsonb_build_array(t.n)),
      '[]'::jsonb)
    where ${oauthGrants.userId} = ${userId} and ${oauthGrants.newTools} and ${oauthGrants.revokedAt} is null
      and not ${oauthGrants.tools} @> ${JSON.stringify(names)}::jsonb
    returning ${oauthGrants.id}`);
  return rowCount(rows) > 0;
}

/** One statement, touching only the grants that hold such a name. */
async function dropFromChoices(tx: Tx, dropped: (name: SQL) => SQL, where: SQL): Promise<Array<{ id: string; userId: string }>> {
  const result = await tx.execute(sql`
    update ${oauthGrants} set tools = coalesce(
      (select jsonb_agg(t.n order by t.i) from jsonb_array_elements_text(${oauthGrants.tools}) with ordinality as t(n, i)
        where not (${dropped(sql`t.n`)})),
      '[]'::jsonb)
    where ${where}
      and exists (select 1 from jsonb_array_elements_text(${oauthGrants.tools}) as t(n) where ${dropped(sql`t.n`)})
    returning ${oauthGrants.id} as id, ${oauthGrants.userId} as "userId"`);
  return executedRows<{ id: string; userId: string }>(result);
}

/** An uninstalled add-on's tools leave every app's choice: installed again, it starts afresh. */
export async function forgetAddonTools(tx: Tx, userId: string, addonId: string): Promise<boolean> {
  const prefix = `${addonId}__`;
  const changed = await dropFromChoices(tx, (n) => sql`left(${n}, ${prefix.length}) = ${prefix}`, sql`${oauthGrants.userId} = ${userId} and ${oauthGrants.revokedAt} is null`);
  return changed.length > 0;
}

/**
 * Brought back later, a tool reaches only the apps the person gives it, like any new tool. The
 * caller drops the changed grants' gates once the release is stored (`announceChoicesForgotten`).
 */
export function forgetRemovedTools(tx: Tx, mcpNames: string[]): Promise<Array<{ id: string; userId: string }>> {
  if (!mcpNames.length) return Promise.resolve([]);
  const removed = JSON.stringify(mcpNames);
  return dropFromChoices(tx, (n) => sql`${removed}::jsonb ? ${n}`, sql`true`);
}

/** Past this many grants, one message drops every process's gates rather than one message each. */
const ANNOUNCED_ONE_BY_ONE = 200;

/** The grants `forgetRemovedTools` changed: every process drops their cached gates (and so their choices). */
export async function announceChoicesForgotten(svc: Services, grants: Array<{ id: string; userId: string }>) {
  if (grants.length > ANNOUNCED_ONE_BY_ONE) return svc.changes.changed('gate', {});
  for (const g of grants) await svc.changes.changed('gate', { userId: g.userId, grantId: g.id });
}

const rowCount = (result: unknown): number => executedRows(result).length;
