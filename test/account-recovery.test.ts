// Issue #40, "no way back in": a person confirms their email by a mailed link, and one who forgot
// their password gets back in by a one-time link that signs every other session out. Mail goes
// through a real SMTP server; every step is the person's, in Chromium.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { launchBrowser, newContext, signInOnDashboard, watchErrors } from './helpers/browser';
import { Client, newPerson } from './helpers/http';
import { linkIn, startMailbox } from './helpers/mailbox';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { connectApp } from './helpers/mcp';
import { authorizeQuery, pkce, REDIRECT, register } from './helpers/oauth-flow';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let mailbox: Awaited<ReturnType<typeof startMailbox>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;

before(async () => {
  await ensureDashboardBuilt();
  mailbox = await startMailbox();
  tp = await startToolport({ env: { SMTP_URL: mailbox.url, MAIL_FROM: 'Toolport <no-reply@toolport.test>' } });
  ({ browser, close: closeBrowser } = await launchBrowser());
});
after(async () => {
  await closeBrowser?.();
  await tp?.stop();
  await mailbox?.close();
});

let n = 0;
const newEmail = (label: string) => `${label}-${process.pid}-${n++}@example.com`;

async function page(): Promise<{ page: Page; errors: string[]; close(): Promise<void> }> {
  const ctx = await newContext(browser, tp.url);
  const p = await ctx.newPage();
  return { page: p, errors: watchErrors(p, tp.url), close: () => ctx.close() };
}

describe('confirming an email', () => {
  it('a new account is mailed a link; opening it, even signed out elsewhere, confirms the address', async () => {
    const email = newEmail('confirm');
    const { page: p, errors, close } = await page();
    try {
      await p.goto('/signup');
      await p.getByLabel('Email').fill(email);
      await p.getByLabel('Password').fill('a long enough password');
      await p.getByRole('button', { name: 'Create account' }).click();
      await p.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
      await p.getByRole('heading', { name: 'Confirm your email' }).waitFor();

      const mail = await mailbox.next(email, /Confirm your email/);
      assert.match(mail.raw, /^From: Toolport <no-reply@toolport\.test>/m);
      assert.doesNotMatch(mail.text, /password/i, 'the mail carries nothing but the link');
      // Opened on another device, where nobody is signed in.
      const other = await page();
      try {
        await other.page.goto(linkIn(mail));
        await other.page.getByText(`${email} is confirmed.`).waitFor();
        assert.equal(new URL(other.page.url()).hash, '', 'the token leaves the address bar');
        // The same link again: used, and said so.
        await other.page.goto(linkIn(mail));
        await other.page.getByText('This link was used already').waitFor();
        assert.deepEqual(other.errors, []);
      } finally {
        await other.close();
      }
      await p.reload();
      await p.getByText('(confirmed)').waitFor();
      assert.equal(await p.getByRole('heading', { name: 'Confirm your email' }).count(), 0);
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });

  it('the person asks for the link again from Home; only the newest works, and three an hour is the most', async () => {
    const person = await newPerson(tp.url, 'resend');
    const first = await mailbox.next(person.email, /Confirm your email/);
    const { page: p, errors, close } = await page();
    try {
      await signInOnDashboard(p, person.email, person.password);
      for (let i = 1; i <= 3; i++) {
        await p.getByRole('button', { name: 'Send the link again' }).click();
        await p.getByText(`A new link is on its way to ${person.email}.`).waitFor();
        await mailbox.next(person.email, /Confirm your email/, i);
        if (i < 3) await p.reload();
      }
      await p.getByRole('button', { name: 'Send the link again' }).click();
      await p.getByText(/Three links were sent in the last hour/).waitFor();

      await p.goto(linkIn(first));
      await p.getByText(/This link was used already/).waitFor();
      const newest = await mailbox.next(person.email, /Confirm your email/, 3);
      await p.goto(linkIn(newest));
      await p.getByText(`${person.email} is confirmed.`).waitFor();
      await p.getByRole('link', { name: 'Go to your Home page' }).click();
      await p.getByText('(confirmed)').waitFor();
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });
});

describe('resetting a forgotten password', () => {
  it('the mailed link sets a new password, signs the person in here and out everywhere else, and works once', async () => {
    const person = await newPerson(tp.url, 'forgot');
    // Signed in elsewhere (another browser): this session ends with the reset.
    const elsewhere = new Client(tp.url);
    assert.equal((await elsewhere.post('/api/session/login', { email: person.email, password: person.password })).status, 200);

    const { page: p, errors, close } = await page();
    try {
      await p.goto('/signin');
      await p.getByRole('link', { name: 'Forgot your password?' }).click();
      await p.getByRole('heading', { level: 1, name: 'Reset your password' }).waitFor();
      await p.getByLabel('Email').fill(person.email.toUpperCase());
      await p.getByRole('button', { name: 'Send reset link' }).click();
      await p.getByText(`If an account uses ${person.email}, a link to reset its password is on its way there.`).waitFor();

      const mail = await mailbox.next(person.email, /Reset your Toolport password/);
      const link = linkIn(mail);
      await p.goto(link);
      await p.getByRole('heading', { level: 1, name: 'Choose a new password' }).waitFor();
      assert.equal(new URL(p.url()).hash, '', 'the token leaves the address bar');
      await p.getByLabel('New password').fill('short');
      await p.getByRole('button', { name: 'Set password and sign in' }).click();
      await p.getByText('Use at least 10 characters.').waitFor();
      await p.getByLabel('New password').fill('a brand new password');
      await p.getByRole('button', { name: 'Set password and sign in' }).click();
      await p.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
      await p.getByText('Your new password is set. Every other place where you were signed in is signed out.').waitFor();
      // Opening the link proved the address too.
      await p.getByText('(confirmed)').waitFor();

      assert.equal((await elsewhere.get('/api/me')).status, 401, 'the other session ended');
      assert.equal((await person.client.get('/api/me')).status, 401, 'the sign-up session ended');
      await mailbox.next(person.email, /Your Toolport password was changed/);

      const old = await new Client(tp.url).post('/api/session/login', { email: person.email, password: person.password });
      assert.equal(old.status, 401, 'the old password no longer signs in');
      const fresh = await new Client(tp.url).post('/api/session/login', { email: person.email, password: 'a brand new password' });
      assert.equal(fresh.status, 200);

      // The link again, in another browser: used, said so, and the password stays.
      const again = await page();
      try {
        await again.page.goto(link);
        await again.page.getByLabel('New password').fill('the attacker password');
        await again.page.getByRole('button', { name: 'Set password and sign in' }).click();
        await again.page.getByText(/This link was used already, and works once/).waitFor();
      } finally {
        await again.close();
      }
      assert.equal((await new Client(tp.url).post('/api/session/login', { email: person.email, password: 'the attacker password' })).status, 401);
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });

  it('an unknown email gets the same answer and no mail; one email gets at most three links an hour', async () => {
    const known = await newPerson(tp.url, 'limit');
    const unknown = newEmail('nobody');
    const { page: p, close } = await page();
    try {
      await p.goto('/forgot-password');
      await p.getByLabel('Email').fill(unknown);
      await p.getByRole('button', { name: 'Send reset link' }).click();
      await p.getByText(`If an account uses ${unknown}, a link to reset its password is on its way there.`).waitFor();
    } finally {
      await close();
    }
    const anyone = new Client(tp.url);
    for (let i = 0; i < 3; i++) {
      const r = await anyone.post('/api/session/reset-request', { email: known.email });
      assert.equal(r.status, 202);
      assert.equal(r.body.message, `If an account uses ${known.email}, a link to reset its password is on its way there. It works once, for 30 minutes.`);
    }
    const fourth = await anyone.post('/api/session/reset-request', { email: known.email });
    assert.equal(fourth.status, 429);
    assert.match(fourth.body.detail, /Too many reset links were asked for this email/);
    // The unknown email is counted the same way, so the limit tells nothing either.
    for (let i = 0; i < 2; i++) assert.equal((await anyone.post('/api/session/reset-request', { email: unknown })).status, 202);
    assert.equal((await anyone.post('/api/session/reset-request', { email: unknown })).status, 429);

    await mailbox.next(known.email, /Reset your Toolport password/, 2);
    assert.equal(mailbox.mails.filter((m) => m.to.includes(unknown)).length, 0, 'no mail to an email without an account');
    // Only the newest of the three links works.
    const links = [0, 1, 2].map((i) => mailbox.mails.filter((m) => m.to.includes(known.email) && /Reset/.test(m.subject))[i]!);
    const stale = await anyone.post('/api/session/reset', { token: new URL(linkIn(links[0]!)).hash.slice('#token='.length), password: 'another new password' });
    assert.equal(stale.status, 410);
  });

  it('a made-up, tampered or expired link is refused with a sentence and changes nothing', async () => {
    const person = await newPerson(tp.url, 'expired');
    const anyone = new Client(tp.url);
    assert.equal((await anyone.post('/api/session/reset-request', { email: person.email })).status, 202);
    const token = new URL(linkIn(await mailbox.next(person.email, /Reset your Toolport password/))).hash.slice('#token='.length);

    for (const bad of ['tpr_made-up', `${token.slice(0, -2)}xx`, `tpv_${token.slice(4)}`, 42]) {
      const r = await anyone.post('/api/session/reset', { token: bad, password: 'another new password' });
      assert.ok(r.status === 404 || r.status === 422, `${String(bad)}: ${r.status}`);
      if (r.status === 404) assert.match(r.body.detail, /This reset link is not valid/);
    }
    const realNow = tp.svc.clock;
    tp.svc.clock = { now: () => new Date(Date.now() + 31 * 60_000) };
    try {
      const late = await anyone.post('/api/session/reset', { token, password: 'another new password' });
      assert.equal(late.status, 410);
      assert.match(late.body.detail, /This link has expired \(it works for 30 minutes\)/);
    } finally {
      tp.svc.clock = realNow;
    }
    assert.equal((await person.client.get('/api/me')).status, 200, 'nothing changed: the session stands');
    assert.equal((await new Client(tp.url).post('/api/session/login', { email: person.email, password: person.password })).status, 200);
  });

  it('the sign-in page an app opens leads to the reset', async () => {
    const person = await newPerson(tp.url, 'oauth');
    const app = await register(tp.url);
    const { challenge } = pkce();
    const { page: p, errors, close } = await page();
    try {
      await p.goto(authorizeQuery({ response_type: 'code', client_id: app.client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: person.user.mcpUrl, state: 's' }));
      await p.getByRole('heading', { name: 'Sign in to Toolport' }).waitFor();
      const [tab] = await Promise.all([p.context().waitForEvent('page'), p.getByRole('link', { name: 'Forgot your password?' }).click()]);
      await tab.getByRole('heading', { level: 1, name: 'Reset your password' }).waitFor();
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });
});

describe('where the person is signed in', () => {
  it('lists each session by browser and network; the person signs one out, then all others, and changes the password', async () => {
    const person = await newPerson(tp.url, 'sessions');
    const a = await page();
    const b = await page();
    try {
      await signInOnDashboard(a.page, person.email, person.password);
      await signInOnDashboard(b.page, person.email, person.password);
      // Each browser new to the account is told to its owner, by name and network.
      const notice = await mailbox.next(person.email, /^New sign-in to your Toolport account$/, 1);
      assert.match(notice.text, /a browser it had not seen before: .*Chrome.* on Linux, from this server’s own machine\./);
      const notices = () => mailbox.mails.filter((m) => m.to.includes(person.email) && /^New sign-in/.test(m.subject)).length;
      await a.page.reload();
      const rows = a.page.locator('.sign-ins li');
      await a.page.getByRole('heading', { name: 'Where you are signed in' }).waitFor();
      await rows.nth(2).waitFor();
      assert.equal(await rows.count(), 3, 'sign-up (the HTTP client), browser A and browser B');
      const current = a.page.locator('[data-session="current"]');
      assert.match(await current.innerText(), /Chrome.* on Linux[\s\S]*This browser[\s\S]*From this server’s own machine\. Signed in/);
      assert.equal(await current.getByRole('button', { name: /^Sign out/ }).count(), 0, 'this browser is signed out with the usual button');

      // B is the other Chrome: signing it out sends B to the sign-in page on its next step.
      const otherChrome = a.page.locator('[data-session="other"]', { hasText: 'Chrome' });
      await otherChrome.getByRole('button', { name: /^Sign out Chrome/ }).click();
      await a.page.getByText(/^Chrome.* is signed out\.$/).waitFor();
      // The list is read again after the notice shows: wait for the row to go, then count.
      await rows.nth(2).waitFor({ state: 'detached' });
      assert.equal(await rows.count(), 2);
      await b.page.reload();
      await b.page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();

      // Everywhere else: the sign-up session ends; A stays.
      await a.page.getByRole('button', { name: 'Sign out everywhere else' }).click();
      await a.page.getByRole('button', { name: 'Sign out the others' }).click();
      await a.page.getByText('One other session is signed out.').waitFor();
      assert.equal((await person.client.get('/api/me')).status, 401);
      await rows.nth(1).waitFor({ state: 'detached' });
      assert.equal(await rows.count(), 1);

      // A new password signs the others out again (B signed in meanwhile), never this browser.
      await signInOnDashboard(b.page, person.email, person.password);
      await a.page.getByLabel('Current password').fill('not my password');
      await a.page.getByLabel('New password').fill('the next long password');
      await a.page.getByRole('button', { name: 'Change password' }).click();
      await a.page.getByText('This is not your current password.').waitFor();
      await a.page.getByLabel('Current password').fill(person.password);
      await a.page.getByRole('button', { name: 'Change password' }).click();
      await a.page.getByText('Your password is changed. One other session was signed out.').waitFor();
      await mailbox.next(person.email, /Your Toolport password was changed/);
      assert.equal(notices(), 2, 'B signing in again is not news: it signed in before');
      await b.page.reload();
      await b.page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
      await a.page.reload();
      await a.page.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
      assert.equal((await new Client(tp.url).post('/api/session/login', { email: person.email, password: 'the next long password' })).status, 200);
      assert.deepEqual([...a.errors, ...b.errors], []);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a person cannot see or end anyone else’s session', async () => {
    const owner = await newPerson(tp.url, 'owner');
    const other = await newPerson(tp.url, 'other');
    const [theirs] = (await owner.client.get('/api/sessions')).body as Array<{ id: string }>;
    assert.ok(theirs);
    const listed = (await other.client.get('/api/sessions')).body as Array<{ id: string }>;
    assert.deepEqual(listed.map((s) => s.id).filter((id) => id === theirs.id), []);
    const r = await other.client.request('DELETE', `/api/sessions/${theirs.id}`);
    assert.equal(r.status, 404);
    assert.equal(r.body.detail, 'That session does not exist.');
    assert.equal((await owner.client.get('/api/me')).status, 200, 'the owner stays signed in');
    for (const bad of ['x', '%25', 'a'.repeat(200)]) assert.equal((await other.client.request('DELETE', `/api/sessions/${bad}`)).status, 404);
  });
});

describe('leaving Toolport', () => {
  it('the person downloads their data, then deletes the account: the app’s next call is refused and nothing of theirs is left', async () => {
    const hook = await startAddonServer({ add_note: () => ({ text: 'Added.' }) });
    const person = await personWithNotes(tp.url, hook, { add_note: true }, 'leaving');
    const { client: app } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    const { page: p, errors, close } = await page();
    try {
      assert.equal((await app.callTool({ name: `${person.addonId}__add_note`, arguments: { text: 'before' } })).isError, undefined);
      await signInOnDashboard(p, person.email, person.password);

      const [download] = await Promise.all([p.waitForEvent('download'), p.getByRole('link', { name: 'Download your data' }).click()]);
      assert.equal(download.suggestedFilename(), 'toolport-export.json');
      const exported = JSON.parse(readFileSync((await download.path())!, 'utf8'));
      assert.equal(exported.account.email, person.email);
      assert.deepEqual(exported.installs.map((i: { addon: { id: string } }) => i.addon.id), [person.addonId]);
      assert.deepEqual(exported.apps.map((a: { appName: string }) => a.appName), ['Claude']);
      assert.equal(exported.calls.length, 1);
      assert.equal(exported.calls[0].tool, 'add_note');

      await p.getByRole('button', { name: 'Delete your account' }).click();
      await p.getByLabel('Your password', { exact: true }).fill('not my password');
      await p.getByRole('button', { name: 'Delete my account' }).click();
      await p.getByText('Your password is not right.').waitFor();
      await p.getByLabel('Your password', { exact: true }).fill(person.password);
      await p.getByRole('button', { name: 'Delete my account' }).click();
      await p.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
    await assert.rejects(app.callTool({ name: `${person.addonId}__add_note`, arguments: { text: 'after' } }), 'the app is refused at once');
    await app.close().catch(() => {});
    assert.equal((await new Client(tp.url).post('/api/session/login', { email: person.email, password: person.password })).status, 401);
    assert.equal(hook.calls().length, 1, 'the refused call reached nobody');
    const left = await tp.svc.db.execute(sql`
      select (select count(*) from users where id = ${person.user.id})
        + (select count(*) from sessions where user_id = ${person.user.id})
        + (select count(*) from oauth_grants where user_id = ${person.user.id})
        + (select count(*) from installs where user_id = ${person.user.id})
        + (select count(*) from tool_switches where user_id = ${person.user.id})
        + (select count(*) from calls where user_id = ${person.user.id})
        + (select count(*) from email_links where user_id = ${person.user.id}) as n`);
    assert.equal(Number(((left as { rows?: Array<{ n: unknown }> }).rows ?? (left as unknown as Array<{ n: unknown }>))[0]!.n), 0, 'nothing of the account is left');
    // The email is free again.
    assert.equal((await new Client(tp.url).post('/api/session/signup', { email: person.email, password: 'a fresh start password' })).status, 201);

    // Whoever publishes add-ons deletes them first: others installed them.
    const refused = await person.dev.client.post('/api/me/delete', { password: person.dev.password });
    assert.equal(refused.status, 409);
    assert.match(refused.body.detail, /^You publish an add-on \(.+\)\. Delete it on the Developers page first/);
    await hook.close();
  });
});
