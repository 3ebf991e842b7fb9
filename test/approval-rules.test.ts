import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { notesManifest, personWithNotes, startAddonServer } from './helpers/addon-server';
import { eq } from 'drizzle-orm';
import { approvalRules } from '../packages/core/src/db/schema/index';
import { Client, installFor } from './helpers/http';
import { pendingWhere } from './helpers/approvals';
import { connectApp, TestOAuthProvider } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { launchBrowser, screenshots } from './helpers/browser';
import { axeSerious, dashboardAs } from './helpers/dashboard';

/**
 * The person's own approval rules (issue #25, docs/approvals.md "Rules you set"), end to end: the
 * SDK's MCP client through the real OAuth flow, a real add-on verifying signatures, the rules set
 * through the dashboard's API. Time moves through the service's clock, as every test that needs it.
 */
let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport();
  hook = await startAddonServer({
    search_notes: (b) => ({ text: `Found notes for ${b.arguments.query ?? 'nothing'}.` }),
    add_note: (b) => ({ text: `Added ${b.arguments.text}.` }),
    delete_note: (b) => ({ text: `Deleted ${b.arguments.id}.` }),
  });
  // Every delete is described, so nothing skips the person unless a rule does (n-skip answers null).
  hook.onConfirm((b) => (b.arguments.id === 'n-skip' ? { confirm: null } : { confirm: { message: `Delete ${b.arguments.id}?`, style: 'destructive' } }));
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

type Edit = Parameters<typeof personWithNotes>[4];
const ALL_ON = { search_notes: true, add_note: true, delete_note: true };

/** Each app registers once (registrations are limited per address), as Claude does, then signs in for each person. */
const registered = new Map<string, TestOAuthProvider['client']>();
async function connectAs(name: string, mcpUrl: string, person: Client) {
  const provider = new TestOAuthProvider(name);
  provider.client = registered.get(name);
  const app = await connectApp(mcpUrl, person, { provider });
  registered.set(name, provider.client);
  return app;
}

/** A person with Notes (every tool on) and two apps let in: Claude and Cursor, each with its connection id. */
async function setup(edit?: Edit) {
  const p = await personWithNotes(tp.url, hook, ALL_ON, 'rul', edit);
  const claude = await connectAs('Claude', p.user.mcpUrl, p.client);
  const cursor = await connectAs('Cursor', p.user.mcpUrl, p.client);
  const connections = (await p.client.get('/api/connections')).body as Array<{ id: string; appName: string }>;
  const grant = (name: string) => connections.find((c) => c.appName === name)!.id;
  return { person: p.client, dev: p.dev.client, addonId: p.addonId, claude: claude.client, cursor: cursor.client, claudeId: grant('Claude'), cursorId: grant('Cursor') };
}

async function putRule(person: Client, body: Record<string, unknown>) {
  const res = await person.put('/api/rules', body);
  assert.equal(res.status, 200, `PUT /api/rules ${JSON.stringify(body)} → ${res.status} ${res.text}`);
  return res.body as { id: string; mode: string; expiresAt: string | null; app: { id: string } | null };
}

/** The first pending approval whose arguments hold `value` (a note, a text or a query), once the dashboard lists it. */
const pendingOf = (person: Client, value: string) => pendingWhere(person, (args) => Object.values(args ?? {}).includes(value), value);

const deliveredWith = (key: string, value: string) => hook.calls().filter((d) => d.body.arguments?.[key] === value);
const textOf = (r: any) => (r.content as Array<{ text: string }>)[0]!.text;
const digest = (raw: unknown) => `sha256:${createHash('sha256').update(JSON.stringify(raw)).digest('hex')}`;
const lastCall = async (person: Client) => (await person.get('/api/calls')).body.items[0];

describe('ask every time', () => {
  it('makes a tool that is not destructive wait for the person, and an allow runs it with its receipt', async () => {
    const { person, addonId, claude } = await setup();
    await putRule(person, { addon: addonId, tool: 'search_notes', mode: 'ask_every_time' });
    const call = claude.callTool({ name: `${addonId}__search_notes`, arguments: { query: 'q-ask' } });
    const approval = await pendingOf(person, 'q-ask');
    assert.equal(approval.tool, 'search_notes');
    assert.equal(deliveredWith('query', 'q-ask').length, 0, 'nothing ran before the decision');
    assert.equal((await person.post(`/api/approvals/${approval.id}/decision`, { decision: 'allow' })).status, 200);
    const result = await call;
    assert.equal(result.isError, undefined, JSON.stringify(result));
    const [delivered] = deliveredWith('query', 'q-ask');
    assert.equal(delivered!.body.approval.id, approval.id);
    assert.equal(delivered!.body.approval.channel, 'dashboard');
    const log = await lastCall(person);
    assert.equal(log.decision, 'allowed');
    assert.equal(log.decidedBy, 'dashboard');
  });

  it('still asks when a confirm add-on says the call needs no approval: the person’s rule wins', async () => {
    const { person, addonId, claude } = await setup();
    await putRule(person, { addon: addonId, tool: 'delete_note', mode: 'ask_every_time' });
    const call = claude.callTool({ name: `${addonId}__delete_note`, arguments: { id: 'n-skip' } });
    const approval = await pendingOf(person, 'n-skip');
    assert.equal(approval.confirm, null, 'no description: the add-on gave none');
    assert.equal((await person.post(`/api/approvals/${approval.id}/decision`, { decision: 'deny' })).status, 200);
    const result = await call;
    assert.equal(result.isError, true);
    assert.equal(deliveredWith('id', 'n-skip').length, 0);
  });

  it('an app’s own rule wins over the rule for every app', async () => {
    const { person, addonId, claude, cursor, cursorId } = await setup();
    await putRule(person, { addon: addonId, tool: 'add_note', mode: 'ask_every_time' });
    await putRule(person, { addon: addonId, tool: 'add_note', app: cursorId, mode: 'ask' });
    const fromCursor = await cursor.callTool({ name: `${addonId}__add_note`, arguments: { text: 't-cursor' } });
    assert.equal(fromCursor.isError, undefined, JSON.stringify(fromCursor));
    const fromClaude = claude.callTool({ name: `${addonId}__add_note`, arguments: { text: 't-claude' } });
    const approval = await pendingOf(person, 't-claude');
    await person.post(`/api/approvals/${approval.id}/decision`, { decision: 'allow' });
    assert.equal((await fromClaude).isError, undefined);
  });
});

describe('allow for this app', () => {
  it('runs a destructive tool without asking for that app only, and the add-on receives the rule’s receipt', async () => {
    const { person, addonId, claude, cursor, claudeId } = await setup();
    const refused = await person.put('/api/rules', { addon: addonId, tool: 'delete_note', app: claudeId, mode: 'allow' });
    assert.equal(refused.status, 422, refused.text);
    assert.match(refused.body.detail, /changes or deletes things/);
    assert.match(refused.body.detail, /"acknowledge": "destructive"/);
    const noApp = await person.put('/api/rules', { addon: addonId, tool: 'delete_note', mode: 'allow', acknowledge: 'destructive' });
    assert.equal(noApp.status, 422, noApp.text);
    assert.match(noApp.body.detail, /for one app/);
    assert.equal((await person.get('/api/rules')).body.length, 0, 'nothing was stored');

    const rule = await putRule(person, { addon: addonId, tool: 'delete_note', app: claudeId, mode: 'allow', acknowledge: 'destructive' });
    assert.equal(rule.app!.id, claudeId);
    assert.equal(rule.expiresAt, null);
    const result = await claude.callTool({ name: `${addonId}__delete_note`, arguments: { id: 'n-rule' } });
    assert.equal(result.isError, undefined, JSON.stringify(result));
    assert.equal(textOf(result), 'Deleted n-rule.');
    const [delivered] = deliveredWith('id', 'n-rule');
    assert.equal(delivered!.body.approval.channel, 'rule');
    assert.equal(delivered!.body.approval.id, rule.id);
    assert.equal(delivered!.body.approval.argumentsHash, digest(delivered!.body.arguments));
    assert.ok(Number.isFinite(Date.parse(delivered!.body.approval.decidedAt)));
    assert.equal(hook.received.filter((d) => d.body.type === 'tool.confirm' && d.body.arguments?.id === 'n-rule').length, 0, 'no one was asked');
    const log = await lastCall(person);
    assert.equal(log.outcome, 'ok');
    assert.equal(log.decision, 'allowed');
    assert.equal(log.decidedBy, 'rule');

    // Another app of the same person is still asked.
    const other = cursor.callTool({ name: `${addonId}__delete_note`, arguments: { id: 'n-other' } });
    const approval = await pendingOf(person, 'n-other');
    assert.equal(approval.app, 'Cursor');
    await person.post(`/api/approvals/${approval.id}/decision`, { decision: 'deny' });
    assert.equal((await other).isError, true);
    assert.equal(deliveredWith('id', 'n-other').length, 0);

    // Removed: Claude is asked again.
    assert.equal((await person.delete(`/api/rules/${rule.id}`)).status, 204);
    const again = claude.callTool({ name: `${addonId}__delete_note`, arguments: { id: 'n-again' } });
    const asked = await pendingOf(person, 'n-again');
    await person.post(`/api/approvals/${asked.id}/decision`, { decision: 'deny' });
    assert.equal((await again).isError, true);
  });

  it('for N hours ends at its time: the next call asks again, and the rule is no longer listed', async () => {
    const { person, addonId, claude, claudeId } = await setup();
    const clock = tp.svc.clock;
    const realNow = () => clock.now().getTime();
    let rule;
    try {
      // Set 59 minutes ago for one hour: a minute of it is left.
      tp.svc.clock = { now: () => new Date(realNow() - 59 * 60_000) };
      rule = await putRule(person, { addon: addonId, tool: 'delete_note', app: claudeId, mode: 'allow', hours: 1, acknowledge: 'destructive' });
    } finally {
      tp.svc.clock = clock;
    }
    assert.ok(Date.parse(rule.expiresAt!) > realNow());
    const allowed = await claude.callTool({ name: `${addonId}__delete_note`, arguments: { id: 'n-timed' } });
    assert.equal(allowed.isError, undefined, JSON.stringify(allowed));
    assert.equal(deliveredWith('id', 'n-timed')[0]!.body.approval.channel, 'rule');

    try {
      // Two minutes on: the hour is over.
      tp.svc.clock = { now: () => new Date(realNow() + 2 * 60_000) };
      const call = claude.callTool({ name: `${addonId}__delete_note`, arguments: { id: 'n-late' } });
      const approval = await pendingOf(person, 'n-late');
      assert.equal(deliveredWith('id', 'n-late').length, 0, 'the expired allow let nothing through');
      await person.post(`/api/approvals/${approval.id}/decision`, { decision: 'deny' });
      assert.equal((await call).isError, true);
      assert.deepEqual((await person.get('/api/rules')).body, [], 'the expired rule is swept');
    } finally {
      tp.svc.clock = clock;
    }
  });
});

describe('allow, when the tool changes', () => {
  it('an allow set while the tool changed nothing stops once the person accepts a release that makes it destructive', async () => {
    const { person, dev, addonId, claude, claudeId } = await setup();
    // No warning is due for a tool that only adds: the rule is set without the acknowledgement.
    await putRule(person, { addon: addonId, tool: 'add_note', app: claudeId, mode: 'allow' });
    assert.equal((await claude.callTool({ name: `${addonId}__add_note`, arguments: { text: 't-plain' } })).isError, undefined);

    const manifest = notesManifest(addonId, hook.url, { visibility: 'public' });
    (manifest.tools[1] as Record<string, unknown>).destructive = true;
    const pushed = await dev.put(`/api/addons/${addonId}`, manifest);
    assert.equal(pushed.status, 200, pushed.text);
    // Until the person accepts it, Claude is served the release they accepted, and the rule stands.
    assert.equal((await claude.callTool({ name: `${addonId}__add_note`, arguments: { text: 't-unreviewed' } })).isError, undefined);
    assert.equal(deliveredWith('text', 't-unreviewed').length, 1);
    const install = (await person.get('/api/installs')).body.find((i: any) => i.addon.id === addonId);
    const accepted = await person.post(`/api/installs/${addonId}/accept`, { version: install.update.to });
    assert.equal(accepted.status, 200, accepted.text);

    // Now it changes things, and the person was never warned for this rule: it asks again.
    const call = claude.callTool({ name: `${addonId}__add_note`, arguments: { text: 't-accepted' } });
    const approval = await pendingOf(person, 't-accepted');
    assert.equal(deliveredWith('text', 't-accepted').length, 0, 'the allow set without the warning let nothing through');
    await person.post(`/api/approvals/${approval.id}/decision`, { decision: 'deny' });
    assert.equal((await call).isError, true);
    const [listed] = (await person.get('/api/rules')).body;
    assert.equal(listed.mode, 'allow');
    assert.equal(listed.needsAcknowledge, true, 'the rule says it asks again until it is set with the warning');

    // Set again through the warning, it applies.
    const again = await putRule(person, { addon: addonId, tool: 'add_note', app: claudeId, mode: 'allow', acknowledge: 'destructive' });
    assert.equal((again as any).needsAcknowledge, false);
    assert.equal((await claude.callTool({ name: `${addonId}__add_note`, arguments: { text: 't-acknowledged' } })).isError, undefined);
    assert.equal(deliveredWith('text', 't-acknowledged')[0]!.body.approval.channel, 'rule');
  });
});

describe('a release that removes a tool', () => {
  it('takes it from every app and every rule: brought back and switched on, it reaches only the apps the person gives it', async () => {
    const { person, dev, addonId, claude, claudeId } = await setup();
    await putRule(person, { addon: addonId, tool: 'add_note', app: claudeId, mode: 'never' });
    const chosenBy = async (grantId: string) => ((await person.get('/api/connections')).body as any[]).find((c) => c.id === grantId).tools as string[];
    assert.ok((await chosenBy(claudeId)).includes(`${addonId}__add_note`));

    const full = notesManifest(addonId, hook.url, { visibility: 'public' });
    const without = { ...full, tools: full.tools.filter((t) => t.name !== 'add_note') };
    assert.equal((await dev.put(`/api/addons/${addonId}`, without)).status, 200);
    assert.deepEqual((await person.get('/api/rules')).body, [], 'the removed tool’s rule is gone');

    assert.equal((await dev.put(`/api/addons/${addonId}`, full)).status, 200);
    const switched = await person.patch(`/api/installs/${addonId}`, { tools: { add_note: true } });
    assert.equal(switched.status, 200, switched.text);
    assert.ok(!(await chosenBy(claudeId)).includes(`${addonId}__add_note`), 'an app let in before does not get the returning tool');
    const names = (await claude.listTools()).tools.map((t) => t.name);
    assert.ok(!names.includes(`${addonId}__add_note`), `Claude does not list it: ${names.join(', ')}`);
    const refused = await claude.callTool({ name: `${addonId}__add_note`, arguments: { text: 't-returned' } });
    assert.match(textOf(refused), /has not given this app the tool/);
    assert.equal(deliveredWith('text', 't-returned').length, 0);
  });
});

describe('revoking an app', () => {
  it('removes its rules, so they are neither listed nor kept', async () => {
    const { person, addonId, claudeId } = await setup();
    await putRule(person, { addon: addonId, tool: 'add_note', app: claudeId, mode: 'never' });
    await putRule(person, { addon: addonId, tool: 'search_notes', mode: 'ask_every_time' });
    assert.equal((await person.delete(`/api/connections/${claudeId}`)).status, 204);
    const listed = (await person.get('/api/rules')).body as any[];
    assert.deepEqual(listed.map((r) => [r.tool, r.app]), [['search_notes', null]], 'the rule for every app stays');
    const kept = await tp.svc.db.select().from(approvalRules).where(eq(approvalRules.grantId, claudeId));
    assert.equal(kept.length, 0, 'the revoked app’s rule is deleted, not only hidden');
  });
});

describe('the developer’s check script', () => {
  it('runs as the test person: the developer’s own rules do not apply to it', async () => {
    const { person, dev, addonId } = await setup();
    // The developer uses their own add-on too, and blocks a tool for every app and asks for another.
    await installFor({ client: dev }, addonId, ALL_ON);
    await putRule(dev, { addon: addonId, tool: 'add_note', mode: 'never' });
    await putRule(dev, { addon: addonId, tool: 'search_notes', mode: 'ask_every_time' });
    const res = await dev.post(`/api/addons/${addonId}/check`, [
      { tool: 'add_note', arguments: { text: 't-check' } },
      { tool: 'search_notes', arguments: { query: 'q-check' } },
    ]);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.tools.map((t: any) => t.refused ?? null), [null, null], JSON.stringify(res.body));
    assert.equal(deliveredWith('text', 't-check').length, 1);
    assert.equal((await person.get('/api/rules')).body.length, 0, 'the person’s own rules are their own');
  });
});

describe('never', () => {
  it('answers that the person blocked the tool, delivers nothing, and logs it as blocked', async () => {
    const { person, addonId, claude, cursor, claudeId } = await setup();
    await putRule(person, { addon: addonId, tool: 'add_note', app: claudeId, mode: 'never' });
    const before = hook.received.length;
    const result = await claude.callTool({ name: `${addonId}__add_note`, arguments: { text: 't-blocked' } });
    assert.equal(result.isError, true);
    assert.equal(textOf(result), 'The person blocked this tool for this app in Toolport, so the call did not run. Do not retry it.');
    assert.equal(hook.received.length, before, 'nothing was delivered');
    const log = await lastCall(person);
    assert.equal(log.outcome, 'blocked');
    assert.equal(log.decision, 'blocked');
    assert.equal(log.decidedBy, 'rule');
    // The person stopped it: Activity counts it with what was not approved, not as a failure.
    const activity = await person.get('/api/calls/activity?period=1h');
    assert.equal(activity.status, 200, activity.text);
    assert.deepEqual(activity.body.totals, { calls: 1, ok: 0, stopped: 1, failed: 0 });
    // Only that app: Cursor's call runs.
    assert.equal((await cursor.callTool({ name: `${addonId}__add_note`, arguments: { text: 't-cursor-ok' } })).isError, undefined);

    // For every app, a destructive tool too: nobody is even asked.
    await putRule(person, { addon: addonId, tool: 'delete_note', mode: 'never' });
    const del = await cursor.callTool({ name: `${addonId}__delete_note`, arguments: { id: 'n-never' } });
    assert.equal(textOf(del), 'The person blocked this tool in Toolport, so the call did not run. Do not retry it.');
    assert.equal(hook.received.filter((d) => d.body.arguments?.id === 'n-never').length, 0, 'not even a confirm');
  });
});

describe('alwaysAsk', () => {
  it('refuses an allow rule for a tool the add-on marks alwaysAsk, and asks for every call of it', async () => {
    const { person, addonId, claude, claudeId } = await setup((m) => {
      (m.tools[0] as Record<string, unknown>).alwaysAsk = true;
    });
    const refused = await person.put('/api/rules', { addon: addonId, tool: 'search_notes', app: claudeId, mode: 'allow' });
    assert.equal(refused.status, 422, refused.text);
    assert.match(refused.body.detail, /asks you before every call of “Search notes” \(the add-on marks it alwaysAsk\), so it cannot be allowed without asking/);
    assert.equal((await person.get('/api/rules')).body.length, 0);
    const install = (await person.get('/api/installs')).body.find((i: any) => i.addon.id === addonId);
    assert.equal(install.tools.find((t: any) => t.name === 'search_notes').alwaysAsk, true);

    const call = claude.callTool({ name: `${addonId}__search_notes`, arguments: { query: 'q-always' } });
    const approval = await pendingOf(person, 'q-always');
    await person.post(`/api/approvals/${approval.id}/decision`, { decision: 'allow' });
    assert.equal((await call).isError, undefined);
  });

  it('a release that turns alwaysAsk on stops an allow rule that exists', async () => {
    const { person, dev, addonId, claude, claudeId } = await setup();
    await putRule(person, { addon: addonId, tool: 'delete_note', app: claudeId, mode: 'allow', acknowledge: 'destructive' });
    assert.equal((await claude.callTool({ name: `${addonId}__delete_note`, arguments: { id: 'n-before' } })).isError, undefined);

    const manifest = notesManifest(addonId, hook.url, { visibility: 'public' });
    (manifest.tools[2] as Record<string, unknown>).alwaysAsk = true;
    const pushed = await dev.put(`/api/addons/${addonId}`, manifest);
    assert.equal(pushed.status, 200, pushed.text);
    const install = (await person.get('/api/installs')).body.find((i: any) => i.addon.id === addonId);
    assert.ok(install.update?.tools.some((t: any) => t.fields.some((f: any) => f.field === 'alwaysAsk')), 'the person is shown the change to review');

    const call = claude.callTool({ name: `${addonId}__delete_note`, arguments: { id: 'n-after' } });
    const approval = await pendingOf(person, 'n-after');
    assert.equal(deliveredWith('id', 'n-after').length, 0, 'the allow rule no longer applies');
    await person.post(`/api/approvals/${approval.id}/decision`, { decision: 'allow' });
    assert.equal((await call).isError, undefined);
    assert.equal(deliveredWith('id', 'n-after')[0]!.body.approval.channel, 'dashboard');
  });
});

describe('bad input', () => {
  it('refuses rules for tools not installed, another person’s app, long fields and unknown modes, storing nothing', async () => {
    const { person, addonId, claudeId } = await setup();
    const other = await setup();
    const cases: Array<[Record<string, unknown>, number, RegExp]> = [
      [{ addon: addonId, tool: 'no_such_tool', mode: 'ask_every_time' }, 422, /install the add-on first/],
      [{ addon: 'not-installed', tool: 'search_notes', mode: 'never' }, 422, /install the add-on first/],
      [{ addon: other.addonId, tool: 'search_notes', mode: 'never' }, 422, /install the add-on first/],
      [{ addon: addonId, tool: 'search_notes', app: other.claudeId, mode: 'never' }, 404, /That app does not exist/],
      [{ addon: addonId, tool: 'search_notes', app: 'grt_nope', mode: 'never' }, 404, /That app does not exist/],
      [{ addon: addonId, tool: 'search_notes', mode: 'sometimes' }, 422, /The mode is "ask_every_time", "ask", "allow" or "never"/],
      [{ addon: addonId, tool: 'search_notes', mode: 'never', hours: 2 }, 422, /Only an allow rule can last/],
      [{ addon: addonId, tool: 'add_note', app: claudeId, mode: 'allow', hours: 0 }, 422, /from 1 to 720/],
      [{ addon: addonId, tool: 'add_note', app: claudeId, mode: 'allow', hours: 721 }, 422, /from 1 to 720/],
      [{ addon: addonId, tool: 'add_note', app: claudeId, mode: 'allow', hours: 1.5 }, 422, /from 1 to 720/],
      [{ addon: 'x'.repeat(10_000), tool: 'search_notes', mode: 'never' }, 422, /at most 100 characters/],
      [{ addon: addonId, tool: 'y'.repeat(10_000), mode: 'never' }, 422, /at most 100 characters/],
      [{ addon: addonId, tool: 'search_notes', app: 'z'.repeat(10_000), mode: 'never' }, 422, /at most 100 characters/],
      [{ addon: addonId, tool: 'search_notes', mode: 'never', note: 'n'.repeat(10_000) }, 422, /Only "addon", "tool", "app", "mode", "hours" and "acknowledge"/],
      [{ addon: addonId, tool: 'delete_note', app: claudeId, mode: 'allow', acknowledge: 'yes' }, 422, /The only acknowledgement is "destructive"/],
    ];
    for (const [body, status, sentence] of cases) {
      const res = await person.put('/api/rules', body);
      assert.equal(res.status, status, `${JSON.stringify(body).slice(0, 120)} → ${res.status} ${res.text.slice(0, 300)}`);
      assert.match(res.body.detail, sentence, JSON.stringify(body).slice(0, 120));
      assert.ok(res.text.length < 2_000, 'the refusal does not echo the long input');
    }
    assert.deepEqual((await person.get('/api/rules')).body, []);

    // Another person's rule is not theirs to remove.
    const theirs = await putRule(other.person, { addon: other.addonId, tool: 'add_note', mode: 'never' });
    assert.equal((await person.delete(`/api/rules/${theirs.id}`)).status, 404);
    assert.equal((await other.person.get('/api/rules')).body.length, 1);
    assert.equal((await new Client(tp.url).get('/api/rules')).status, 401);
  });

  it('uninstalling an add-on removes its rules', async () => {
    const { person, addonId } = await setup();
    await putRule(person, { addon: addonId, tool: 'add_note', mode: 'never' });
    assert.equal((await person.delete(`/api/installs/${addonId}`)).status, 204);
    assert.deepEqual((await person.get('/api/rules')).body, []);
  });
});

describe('the dashboard', () => {
  it('sets an allow rule on the Add-ons page in Chromium through the destructive warning; Activity says “allowed by your rule”', async () => {
    const { person, addonId, claude, claudeId } = await setup();
    const { browser, close: closeBrowser } = await launchBrowser();
    const { page, errors, close } = await dashboardAs(browser, tp.url, person, 'desktop');
    try {
      await page.goto('/addons');
      const row = page.locator(`[data-addon="${addonId}"] [data-tool="delete_note"]`);
      await row.locator('summary', { hasText: 'Approval rule' }).click();
      const rules = row.locator('[data-rules-for="delete_note"]');
      assert.match((await rules.textContent()) ?? '', /By default it asks you before every call/);
      // Apps name themselves: the list says where each sends the person back, so two "Claude"s differ.
      const claudeHost = ((await person.get('/api/connections')).body as any[]).find((c) => c.id === claudeId).redirectHost;
      await rules.getByLabel('For', { exact: true }).selectOption({ label: `Claude (${claudeHost})` });
      await rules.getByLabel('Rule', { exact: true }).selectOption('allow');
      assert.deepEqual(await axeSerious(page), []);
      await rules.getByRole('button', { name: 'Save rule for Delete a note' }).click();

      // The warning step: Cancel (here Escape) stores nothing.
      const dialog = page.getByRole('dialog', { name: `Let Claude (${claudeHost}) run “Delete a note” without asking?` });
      await dialog.waitFor();
      assert.match((await dialog.textContent()) ?? '', /changes or deletes things/);
      assert.deepEqual(await axeSerious(page), []);
      await screenshots(page, 'rules-destructive-warning');
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      assert.deepEqual((await person.get('/api/rules')).body, []);

      await rules.getByRole('button', { name: 'Save rule for Delete a note' }).click();
      await dialog.getByRole('button', { name: 'Allow without asking' }).click();
      await row.locator('[data-rule-summary="allow"]').waitFor();
      assert.match((await row.locator('.rule-summary').textContent()) ?? '', /Claude: Allowed without asking until you remove it/);
      const [stored] = (await person.get('/api/rules')).body;
      assert.equal(stored.app.id, claudeId);
      assert.equal(stored.mode, 'allow');

      const result = await claude.callTool({ name: `${addonId}__delete_note`, arguments: { id: 'n-browser' } });
      assert.equal(result.isError, undefined, JSON.stringify(result));
      assert.equal(deliveredWith('id', 'n-browser')[0]!.body.approval.channel, 'rule');

      // The Apps page lists Claude's rule, and only on Claude's card.
      await page.goto('/apps');
      const claudeRules = page.locator(`[data-app-rules="${claudeId}"]`);
      await claudeRules.locator('[data-mode="allow"]').waitFor();
      assert.match((await claudeRules.textContent()) ?? '', /Delete a note.*Allowed without asking until you remove it/);
      assert.equal(await page.locator('[data-app-rules] [data-mode]').count(), 1);
      assert.deepEqual(await axeSerious(page), []);

      await page.goto('/activity');
      const decision = page.locator('tr[data-call] .c-decision').first();
      await decision.waitFor();
      assert.equal((await decision.textContent())?.trim(), 'Allowed by your rule');
      assert.deepEqual(errors, []);
    } finally {
      await close();
      await closeBrowser();
    }
  });
});
