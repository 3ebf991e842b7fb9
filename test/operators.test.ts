import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { ConfigError, parseConfig } from '@toolport/core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { notesManifest, startAddonServer } from './helpers/addon-server';
import { launchBrowser } from './helpers/browser';
import { dashboardAs } from './helpers/dashboard';
import { confirmEmail } from './helpers/mail-files';
import { Client, newPerson, OPERATOR_EMAIL, operatorOf } from './helpers/http';
import { OPERATOR_ID, startToolport, type Toolport } from './helpers/target';

/**
 * Issue #40: sign-up proves no email is yours, so operators (who list add-ons for everyone) are
 * named by account id. Whoever signs up with whatever email gains nothing; an email in
 * TOOLPORT_OPERATORS stops the start; the dashboard shows a person the id to name.
 */
let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;
before(async () => {
  [tp, hook] = await Promise.all([startToolport(), startAddonServer(), ensureDashboardBuilt()]);
});
after(async () => {
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

const PASSWORD = 'correct horse battery';

describe('operators are named by account id', () => {
  it('gives no operator powers to whoever signs up with any email; the account TOOLPORT_OPERATORS names decides', async () => {
    const dev = await newPerson(tp.url, 'asks');
    const id = `asked-${process.pid % 1000}`;
    const created = await dev.client.post('/api/addons', notesManifest(id, hook.url, { visibility: 'public' }));
    assert.equal(created.status, 201, created.text);
    await confirmEmail(dev);
    const decide = (c: Client) => c.post(`/api/operator/listings/${id}/decision`, { decision: 'approve', publisher: 'Asks Ltd' });

    // The operator's own email, in any case, is taken; any other, even one carrying the id, is nobody's operator.
    assert.equal((await new Client(tp.url).post('/api/session/signup', { email: OPERATOR_EMAIL.toUpperCase(), password: PASSWORD })).status, 409);
    for (const email of ['OP@Example.COM', `${OPERATOR_ID}@toolport.test`, 'operator+listings@toolport.test']) {
      const squatter = new Client(tp.url);
      assert.equal((await squatter.post('/api/session/signup', { email, password: PASSWORD })).status, 201, email);
      const me = (await squatter.get('/api/me')).body;
      assert.deepEqual([me.operator, me.id === OPERATOR_ID], [false, false], email);
      assert.equal((await squatter.get('/api/operator/listings')).status, 403, email);
      assert.equal((await decide(squatter)).status, 403, email);
    }

    const op = await operatorOf(tp.url);
    const me = (await op.get('/api/me')).body;
    assert.deepEqual([me.id, me.operator], [OPERATOR_ID, true]);
    assert.equal((await decide(op)).status, 200);
  });

  it('refuses an email in TOOLPORT_OPERATORS at start, saying to name the account id', () => {
    assert.deepEqual(parseConfig({ TOOLPORT_OPERATORS: ` ${OPERATOR_ID}, usr_Ab-9_x ` }).operators, [OPERATOR_ID, 'usr_Ab-9_x']);
    assert.throws(
      () => parseConfig({ TOOLPORT_OPERATORS: `${OPERATOR_ID},op@example.com,operator`, PORT: 'x' }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.equal(err.problems.length, 3, 'reported with the other bad settings');
        assert.ok(
          err.problems.includes(
            'TOOLPORT_OPERATORS: "op@example.com" is an email; name operators by account id (usr_…), which the person reads on their dashboard\'s Home page: anyone can sign up with an email that is not theirs.',
          ),
          err.problems.join('\n'),
        );
        assert.ok(err.problems.some((p) => p.startsWith('TOOLPORT_OPERATORS: "operator" is not an account id')), err.problems.join('\n'));
        return true;
      },
    );
  });

  it('shows the person their account id on the dashboard\'s Home page', async () => {
    ({ browser, close: closeBrowser } = await launchBrowser());
    const person = await newPerson(tp.url, 'reads-id');
    const { page, errors, close } = await dashboardAs(browser, tp.url, person.client, 'desktop');
    await page.goto('/');
    const shown = page.getByTestId('account-id');
    await shown.waitFor();
    assert.equal(await shown.textContent(), (await person.client.get('/api/me')).body.id);
    assert.deepEqual(errors, []);
    await close();
  });
});
