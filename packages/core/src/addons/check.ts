import { asc, eq } from 'drizzle-orm';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { announceDecided, readApproval, transition, type UserEvent } from '../approvals/records';
import { APPROVALS_CHANNEL, userChannel } from '../events/channels';
import { callTool } from '../calls/call-tool';
import { toEnabledTool, toolSet, type EnabledToolSet } from '../calls/enabled-tools';
import type { ApprovalRequest, Approvals, ToolResult } from '../calls/types';
import type { Ctx } from '../context';
import { personId } from '../context';
import { parseInput } from '../input';
import type { Services } from '../services';
import { tools } from '../db/schema/index';
import { getAddon } from './registry';

const MAX_STEPS = 20;
const MAX_WAIT_S = 10;
const MAX_TOTAL_WAIT_S = 30;
const CHECK_APP = { clientId: 'toolport-check', appName: 'Toolport check script' };

type Approve = 'allow' | 'deny' | 'timeout';
type Step = { wait: number } | { tool: string; arguments?: unknown; approve?: Approve };

const WAIT = `Wait 0 to ${MAX_WAIT_S} seconds.`;
const NAME_TOOL = 'Name the tool to call.';

/** A step waits (`{"wait": 2}`) or calls a tool; the keys of the two are not mixed. */
const stepSchema = z
  .object(
    {
      wait: z.number({ message: WAIT }).min(0, WAIT).max(MAX_WAIT_S, WAIT).optional(),
      tool: z.string({ message: NAME_TOOL }).min(1, NAME_TOOL).optional(),
      arguments: z.unknown(),
      approve: z.enum(['allow', 'deny', 'timeout'], { message: 'Use "allow", "deny" or "timeout".' }).optional(),
    },
    { message: 'Each step is an object.' },
  )
  .strict('Unknown key; use tool, arguments, approve or wait.')
  .transform((step, ctx): Step => {
    if (step.wait !== undefined) {
      if (Object.keys(step).length !== 1) ctx.addIssue({ code: 'custom', message: 'A wait step has only "wait".' });
      return { wait: step.wait };
    }
    if (step.tool === undefined) ctx.addIssue({ code: 'custom', path: ['tool'], message: NAME_TOOL });
    return { tool: step.tool ?? '', arguments: step.arguments, approve: step.approve };
  });

const scriptSchema = z
  .custom<unknown[]>((v) => Array.isArray(v), { message: 'Send an array.', params: { sentence: 'A check script is a JSON array of steps.' } })
  .pipe(
    z
      .array(stepSchema)
      .min(1, `Give 1 to ${MAX_STEPS} steps.`)
      .max(MAX_STEPS, `Give 1 to ${MAX_STEPS} steps.`)
      .refine((steps) => steps.reduce((waited, s) => waited + ('wait' in s ? s.wait : 0), 0) <= MAX_TOTAL_WAIT_S, `Wait at most ${MAX_TOTAL_WAIT_S} seconds in all.`),
  );

/** Every tool of the add-on's current version, switched on or not: the developer is testing them. */
async function addonToolSet(svc: Services, addon: { id: string; name: string; webhookDisabled: boolean }): Promise<EnabledToolSet> {
  const rows = await svc.db.select().from(tools).where(eq(tools.addonId, addon.id)).orderBy(asc(tools.position));
  return toolSet(rows.map((t) => toEnabledTool(t, addon.name, addon.webhookDisabled)));
}

/**
 * Plays the person: the approval is recorded, announced and decided through the same records and
 * bus as a real one; "timeout" records the expiry at once instead of waiting 30 s.
 */
function simulatedPerson(svc: Services, real: Approvals, approve: Approve | undefined): Approvals {
  return {
    async request(req: ApprovalRequest) {
      const unsubscribe = await svc.bus.subscribe(userChannel(req.userId), (m) => {
        const event = m as UserEvent;
        if (event.event !== 'approval') return;
        const id = (event.data as { id: string }).id;
        void (async () => {
          const row = await readApproval(svc, id);
          if (!row || row.callId !== req.callId) return;
          const status = approve === 'allow' ? 'allowed' : approve === 'deny' ? 'denied' : 'expired';
          const decided = await transition(svc, id, status, status === 'expired' ? 'timeout' : 'check script', { userId: req.userId });
          if (decided) {
            await svc.bus.publish(APPROVALS_CHANNEL, { id });
            await announceDecided(svc, decided);
          }
        })().catch((err) => svc.log.error('check script decision failed', { err }));
      });
      try {
        return await real.request(req);
      } finally {
        await unsubscribe();
      }
    },
  };
}

export type CheckReport = { tools: Array<{ tool: string; result: ToolResult } | { tool: string; refused: string }> };

/** How a check-script delivery's `user.id` starts; a person's is `usr_` and 26 more characters. */
const CHECK_USER_PREFIX = 'usr_check_';

/**
 * The pseudonym of "check:<developer id>", which no real `usr_` id can collide with: never the
 * developer's own pseudonym, and marked by its `usr_check_` prefix.
 */
function checkUserId(svc: Services, addonId: string, developerId: string): string {
  return CHECK_USER_PREFIX + svc.secrets.pseudonym(addonId, `check:${developerId}`).slice('usr_'.length);
}

/** The add-on hears of the test person; the records (call log, approvals, limits) stay the developer's. */
function asTestPerson(svc: Services, developerId: string): Services {
  return { ...svc, secrets: { ...svc.secrets, pseudonym: (addonId) => checkUserId(svc, addonId, developerId) } };
}

/**
 * Runs as the test person, never the developer's real account, so a script cannot reach the data
 * the add-on keeps for the developer.
 */
export async function runCheckScript({ ctx, addonId, input }: { ctx: Ctx; addonId: string; input: unknown }): Promise<CheckReport> {
  const userId = personId(ctx);
  const addon = await getAddon({ ctx, id: addonId });
  const steps = parseInput(scriptSchema, input, 'The check script is not valid.');
  const set = await addonToolSet(ctx.svc, addon);
  const svc = asTestPerson(ctx.svc, userId);
  const report: CheckReport = { tools: [] };
  for (const step of steps) {
    if ('wait' in step) {
      await sleep(step.wait * 1000);
      continue;
    }
    const real = ctx.svc.approvals;
    const result = await callTool({
      ctx: { svc, actor: { kind: 'app', userId, grantId: `check:${addonId}`, ...CHECK_APP } },
      input: { name: `${addonId}__${step.tool}`, arguments: step.arguments ?? {} },
      options: { tools: set, approvals: real ? simulatedPerson(ctx.svc, real, step.approve) : undefined, asTestPerson: true },
    });
    if (result.isError) {
      const text = result.content.map((b) => (b.type === 'text' ? String(b.text) : '')).join(' ');
      report.tools.push({ tool: step.tool, refused: text });
    } else report.tools.push({ tool: step.tool, result });
  }
  return report;
}
