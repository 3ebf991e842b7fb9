import { createHash } from 'node:crypto';
import { and, asc, eq, inArray } from 'drizzle-orm';
import type { Services } from '../services';
import { addons, connectedAccounts, personToolLists, tools } from '../db/schema/index';
import { liveSecrets } from '../addons/signing-secrets';
import { ToolportError } from '../errors';
import { newId } from '../ids';
import { signatureProblem, type SignedMessage } from '../outbound/signing';
import { postWebhook } from '../outbound/webhook';
import { systemClock } from '../clock';
import { cleanSentence } from '../text/sentence';
import { settingsJson } from './settings';

/*
 * An add-on with `"toolsPerPerson": true` says which of its tools each person is offered (seed 004's
 * available_if, seed 002's tools per run): a signed `tools.list` delivery, answered within 3 s with
 * names from its manifest, kept as long as it says (1 minute to a day) and asked again sooner when
 * the person's settings or connected accounts change, or when the add-on says their list changed.
 * It can only hide tools: the definitions, arguments and safety flags stay the manifest's.
 */
const TOOL_LIST_LIMITS = {
  answerMs: 3_000,
  ttlSeconds: { default: 300, min: 60, max: 86_400 },
  /** An add-on that did not answer is asked again after this long; meanwhile its last list stands. */
  retryMs: 60_000,
  /** Persons one "their lists changed" message may name. */
  changedUsers: 1_000,
} as const;

/** One ask at a time per person and add-on, in this process. */
const asking = new Map<string, Promise<string[]>>();

/**
 * The names of the add-on's tools this person is offered now: the add-on's last answer while it
 * holds, else a fresh one; a failed ask keeps the last list (none before the first answer).
 */
export async function toolsOffered(
  svc: Services,
  o: { userId: string; addonId: string; version: number; settingsSealed: string | null; webhookDisabled: boolean },
): Promise<Set<string>> {
  try {
    return await offered(svc, o);
  } catch (err) {
    // Never the person's whole tool list: this add-on's tools are hidden until it can be asked.
    svc.log.warn('cannot read or ask for a person’s tool list', { err, addonId: o.addonId });
    return new Set();
  }
}

async function offered(svc: Services, o: Parameters<typeof toolsOffered>[1]): Promise<Set<string>> {
  const connected = await svc.db
    .select({ provider: connectedAccounts.provider })
    .from(connectedAccounts)
    .where(and(eq(connectedAccounts.userId, o.userId), eq(connectedAccounts.addonId, o.addonId), eq(connectedAccounts.status, 'connected')))
    .orderBy(asc(connectedAccounts.provider));
  const providers = connected.map((c) => c.provider);
  // A new release (its tools), new settings or accounts: asked again at once.
  const basis = createHash('sha256').update(`${o.version}\n${o.settingsSealed ?? ''}\n${providers.join(',')}`).digest('base64url');
  const [row] = await svc.db.select().from(personToolLists).where(and(eq(personToolLists.userId, o.userId), eq(personToolLists.addonId, o.addonId)));
  if (row && row.basis === basis && row.expiresAt.getTime() > svc.clock.now().getTime()) return new Set(row.tools);
  // Its calls are refused anyway until its developer fixes it: the last list stands, unasked.
  if (o.webhookDisabled) return new Set(row?.tools ?? []);
  const key = `${o.userId}:${o.addonId}`;
  let pending = asking.get(key);
  if (!pending) {
    pending = ask(svc, { ...o, providers, basis, before: row?.tools }).finally(() => asking.delete(key));
    asking.set(key, pending);
  }
  return new Set(await pending);
}

async function ask(
  svc: Services,
  o: { userId: string; addonId: string; settingsSealed: string | null; providers: string[]; basis: string; before: string[] | undefined },
): Promise<string[]> {
  const [addon] = await svc.db.select({ webhookUrl: addons.webhookUrl }).from(addons).where(eq(addons.id, o.addonId));
  const names = (await svc.db.select({ name: tools.name }).from(tools).where(eq(tools.addonId, o.addonId)).orderBy(asc(tools.position))).map((t) => t.name);
  const subject = svc.secrets.pseudonym(o.addonId, o.userId);
  const id = newId('call');
  const now = svc.clock.now();
  const deadline = now.getTime() + TOOL_LIST_LIMITS.answerMs;
  const body = JSON.stringify({
    type: 'tools.list',
    addon: o.addonId,
    user: { id: subject },
    call: { id, deadline: new Date(deadline).toISOString() },
    tools: names,
    ...(o.settingsSealed ? { settings: JSON.parse(settingsJson(svc, o.settingsSealed)) as unknown } : {}),
    accounts: o.providers,
  });
  let got: { tools: string[]; ttlSeconds: number } | string;
  let errorClass = 'bad_answer';
  let status: number | undefined;
  let latencyMs = 0;
  if (!addon) got = 'the add-on is gone';
  else {
    const delivery = await postWebhook({ client: svc.outbound, url: addon.webhookUrl, secrets: await liveSecrets(svc, o.addonId), id, body, kind: 'tools.list', deadline, clock: svc.clock });
    status = delivery.status;
    latencyMs = delivery.latencyMs;
    const a = delivery.answer;
    if (a.kind === 'failure') errorClass = a.errorClass;
    got =
      a.kind === 'tools'
        ? checkList(a, names)
        : a.kind !== 'failure'
          ? 'expected {"tools": [names]}'
          : a.errorClass === 'timeout' || a.errorClass === 'deadline'
            ? `the add-on did not answer within ${TOOL_LIST_LIMITS.answerMs / 1000} seconds`
            : a.detail || a.errorClass;
  }
  const ok = typeof got !== 'string';
  const list = typeof got !== 'string' ? got.tools : (o.before ?? []);
  const expiresAt = new Date(now.getTime() + (typeof got !== 'string' ? got.ttlSeconds * 1000 : TOOL_LIST_LIMITS.retryMs));
  const row = { userId: o.userId, addonId: o.addonId, subject, basis: o.basis, tools: list, expiresAt, askedAt: now };
  await svc.db
    .insert(personToolLists)
    .values(row)
    .onConflictDoUpdate({ target: [personToolLists.userId, personToolLists.addonId], set: { subject, basis: o.basis, tools: list, expiresAt, askedAt: now } });
  svc.logs.delivery({
    id: newId('dlv'),
    addonId: o.addonId,
    callId: id,
    type: 'tools.list',
    attempt: 1,
    subject,
    status: status ?? null,
    latencyMs: Math.max(0, Math.round(latencyMs)),
    errorClass: ok ? null : errorClass,
    detail: ok ? `offers ${list.length} of ${names.length} tools` : cleanSentence(`${got as string}; the person keeps the tools last offered (${list.length}) and is asked again in a minute`, 500),
    meta: { outcome: ok ? 'result' : 'refused' },
    createdAt: now,
  });
  // Another process's copy of the person's tools, and their apps' lists, follow the change.
  if (o.before && !sameNames(o.before, list)) await svc.changes.changed('tools', { userId: o.userId }).catch(() => {});
  return list;
}

/** Only names the manifest has, each once: an add-on hides tools, it never adds or reshapes one. */
function checkList(answer: { tools: unknown; ttlSeconds: unknown }, names: string[]): { tools: string[]; ttlSeconds: number } | string {
  const { tools: listed, ttlSeconds } = answer;
  if (!Array.isArray(listed)) return '"tools" must be a list of tool names';
  if (listed.length > names.length) return `"tools" names ${listed.length} tools, more than the ${names.length} the manifest has`;
  const known = new Set(names);
  const seen = new Set<string>();
  for (const n of listed) {
    if (typeof n !== 'string') return '"tools" must hold tool names only: a tool\'s definition and arguments are the manifest\'s, and cannot be changed per person';
    if (!known.has(n)) return `"tools" names \`${cleanSentence(n, 40)}\`, which the manifest does not have`;
    if (seen.has(n)) return `"tools" names \`${n}\` twice`;
    seen.add(n);
  }
  let ttl: number = TOOL_LIST_LIMITS.ttlSeconds.default;
  if (ttlSeconds !== undefined) {
    const { min, max } = TOOL_LIST_LIMITS.ttlSeconds;
    if (!Number.isInteger(ttlSeconds) || (ttlSeconds as number) < min || (ttlSeconds as number) > max) return `"ttlSeconds" must be a whole number from ${min} to ${max}`;
    ttl = ttlSeconds as number;
  }
  return { tools: names.filter((n) => seen.has(n)), ttlSeconds: ttl };
}

const sameNames = (a: string[], b: string[]) => a.length === b.length && a.every((n, i) => n === b[i]);

/**
 * The add-on says these persons' lists changed (`{"users": [user.id...]}`, signed like its
 * answers): each is asked again at its apps' next listing, and their apps are told the list changed.
 */
export async function toolListsChanged(svc: Services, addonId: string, msg: SignedMessage): Promise<{ users: number }> {
  const problem = signatureProblem(msg, await liveSecrets(svc, addonId), systemClock.now().getTime());
  if (problem) throw new ToolportError('UNAUTHORIZED', problem);
  let parsed: unknown;
  try {
    parsed = JSON.parse(msg.body.toString('utf8'));
  } catch {
    throw new ToolportError('MALFORMED', 'The body is not valid JSON.');
  }
  const users = (parsed as { users?: unknown })?.users;
  if (!Array.isArray(users) || users.some((u) => typeof u !== 'string') || users.length > TOOL_LIST_LIMITS.changedUsers) {
    throw new ToolportError('VALIDATION', `Send {"users": [...]}: up to ${TOOL_LIST_LIMITS.changedUsers} user ids, as your deliveries name them (user.id).`);
  }
  if (!users.length) return { users: 0 };
  const stale = await svc.db
    .update(personToolLists)
    .set({ expiresAt: svc.clock.now() })
    .where(and(eq(personToolLists.addonId, addonId), inArray(personToolLists.subject, users as string[])))
    .returning({ userId: personToolLists.userId });
  for (const { userId } of stale) await svc.changes.changed('tools', { userId });
  return { users: stale.length };
}
