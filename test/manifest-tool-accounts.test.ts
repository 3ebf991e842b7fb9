// Issue #26: a tool names the connected accounts it needs (`tools[].accounts`), each a provider the
// manifest declares in its top-level `accounts`. Only those tokens reach the tool's deliveries, so
// the list travels with the compiled tool into every release; a changed list needs no review.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkManifest } from '@toolport/core';
import { toolDigest } from '../packages/core/src/installs/releases';
import { messagesAt } from './helpers/manifest';
import { notesManifestOf } from './helpers/addon-server';
import { manifestProblems as refused } from './helpers/manifest';

const provider = (name: string) => ({
  provider: name,
  title: name === 'github' ? 'GitHub' : 'Calendar',
  authorizationUrl: `https://${name}.example.com/oauth/authorize`,
  tokenUrl: `https://${name}.example.com/oauth/token`,
  scopes: ['read'],
});

/** Notes with search_notes and add_note, the providers `declared`, and `edit` applied. */
function manifest(declared: string[] | undefined, edit: (tools: any[]) => void = () => {}): any {
  const m: any = notesManifestOf(['search_notes', 'add_note']);
  if (declared) m.accounts = declared.map(provider);
  edit(m.tools);
  return m;
}

const at = messagesAt;

describe('tools[].accounts', () => {
  it('reaches the compiled tool, only where the tool names some, in its order', () => {
    const { manifest: m, tools, warnings } = checkManifest(manifest(['github', 'calendar'], (t) => {
      t[0].accounts = ['calendar', 'github'];
      t[1].accounts = [];
    }));
    assert.deepEqual(tools[0]!.accounts, ['calendar', 'github']);
    assert.equal('accounts' in tools[1]!, false, 'an empty list is left out, as for a tool that needs none');
    assert.deepEqual(m.tools[0]!.accounts, ['calendar', 'github']);
    assert.deepEqual(warnings.filter((w) => w.path.startsWith('/accounts')), [], 'every declared provider is named by a tool');
  });

  it('refuses a bad list with a sentence at its path', () => {
    const errors = refused(manifest(['github'], (t) => {
      t[0].accounts = ['github', 'gitlab', 'github', 'Git Hub', 3];
      t[1].accounts = 'github';
    }));
    assert.match(at(errors, '/tools/0/accounts/1'), /provider `gitlab` is not declared in the manifest's `accounts` \(it declares "github"\): declare it there, with its endpoints and scopes, or take it off this tool\./);
    assert.match(at(errors, '/tools/0/accounts/2'), /provider `github` is already listed at \/tools\/0\/accounts\/0/);
    assert.match(at(errors, '/tools/0/accounts/3'), /provider name "Git Hub" is not valid: a lowercase letter/);
    assert.match(at(errors, '/tools/0/accounts/4'), /provider name must be a string \(got 3\)/);
    assert.match(at(errors, '/tools/1/accounts'), /must be a list of up to 5 provider names from the manifest's `accounts`, for example \["github"\]/);
  });

  it('says so when the manifest declares no providers, and counts at most 5', () => {
    const none = refused(manifest(undefined, (t) => (t[0].accounts = ['github'])));
    assert.match(at(none, '/tools/0/accounts/0'), /provider `github` is not declared: the manifest has no `accounts`/);
    const six = refused(manifest(['github'], (t) => (t[0].accounts = ['a', 'b', 'c', 'd', 'e', 'f'])));
    assert.match(at(six, '/tools/0/accounts'), /A tool needs at most 5 providers \(got 6\)/);
  });

  it('a provider declared with a mistake is reported there, not again at each tool', () => {
    const m = manifest(['github'], (t) => (t[0].accounts = ['github']));
    m.accounts[0].tokenUrl = 'ftp://github.example.com/token';
    const errors = refused(m);
    assert.match(at(errors, '/accounts/0/tokenUrl'), /https/);
    assert.deepEqual(errors.map((e) => e.path), ['/accounts/0/tokenUrl'], 'one problem, where it is');
  });

  it('warns of a declared provider no tool names: no delivery would carry its token', () => {
    const { warnings } = checkManifest(manifest(['github', 'calendar'], (t) => (t[0].accounts = ['github'])));
    assert.match(at(warnings, '/accounts/1'), /No tool names the provider `calendar` in its `accounts`, so no delivery carries its token/);
  });

  it('is not a reviewed field: the current release’s list applies without the person’s review', () => {
    const before = checkManifest(manifest(['github'])).tools[0]!;
    const after = checkManifest(manifest(['github'], (t) => (t[0].accounts = ['github']))).tools[0]!;
    assert.deepEqual(after.accounts, ['github']);
    assert.equal(toolDigest(after), toolDigest(before));
  });
});
