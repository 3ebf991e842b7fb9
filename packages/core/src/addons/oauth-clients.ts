import { and, eq, isNull } from 'drizzle-orm';
import type { Ctx } from '../context';
import { personId } from '../context';
import { notFound, ToolportError, validation, type FieldError } from '../errors';
import type { Services } from '../services';
import { quotedName } from '../input';
import { addonOauthClients, addons } from '../db/schema/index';
import { currentManifest } from './current-release';
import { ACCOUNT_LIMITS } from './manifest';
import { settingValueProblem } from './setting-values';
import type { ManifestAccount } from './types';

/*
 * The client secret is sealed with the master key ring (box 'addon-oauth-client'), and never
 * returned, logged or quoted in a refusal.
 */

type ClientRow = typeof addonOauthClients.$inferSelect;

/**
 * One address per add-on and provider: distinct redirect URIs are the defence against the OAuth
 * mix-up attack (RFC 9700 §4.4), where one add-on gets another provider's code.
 */
export const accountRedirectUri = (svc: Services, addonId: string, provider: string) =>
  `${svc.config.publicUrl.replace(/\/+$/, '')}/accounts/callback/${encodeURIComponent(addonId)}/${encodeURIComponent(provider)}`;

async function ownedAccounts(ctx: Ctx, addonId: string): Promise<{ name: string; accounts: ManifestAccount[] }> {
  const found = await currentManifest(ctx.svc.db, and(eq(addons.id, addonId), eq(addons.ownerId, personId(ctx)), isNull(addons.deletedAt)));
  if (!found) throw notFound('That add-on');
  return { name: found.name, accounts: found.manifest.accounts ?? [] };
}


async function declaredAccount(ctx: Ctx, addonId: string, provider: string): Promise<ManifestAccount> {
  const { name, accounts } = await ownedAccounts(ctx, addonId);
  const account = accounts.find((a) => a.provider === provider);
  if (!account) {
    const declared = accounts.map((a) => `"${a.provider}"`).join(', ');
    throw new ToolportError('NOT_FOUND', `The add-on "${name}" does not declare the provider ${quotedName(provider)} in its manifest's \`accounts\`${declared ? ` (it declares ${declared})` : ''}; declare it in a new release first.`);
  }
  return account;
}

/** What the developer sees of one provider: its client id, and only whether a secret is set. */
function clientView(svc: Services, addonId: string, a: ManifestAccount, row: ClientRow | undefined) {
  return {
    provider: a.provider,
    title: a.title,
    scopes: a.scopes,
    redirectUri: accountRedirectUri(svc, addonId, a.provider),
    clientId: row?.clientId ?? null,
    hasSecret: row?.clientSecretEnc != null,
    updatedAt: row?.updatedAt ?? null,
  };
}

/** `GET /api/addons/{id}/accounts`: every declared provider, with its client if one is stored. */
export async function listAddonOauthClients({ ctx, addonId }: { ctx: Ctx; addonId: string }) {
  const { accounts } = await ownedAccounts(ctx, addonId);
  const rows = await ctx.svc.db.select().from(addonOauthClients).where(eq(addonOauthClients.addonId, addonId));
  return accounts.map((a) => clientView(ctx.svc, addonId, a, rows.find((r) => r.provider === a.provider)));
}

const CLIENT_INPUT_KEYS = ['clientId', 'clientSecret'];
/** RFC 6749 A.1 VSCHAR: printable ASCII. */
const VSCHAR = /^[\x20-\x7e]+$/;

/** The checked `{clientId, clientSecret?}`; every problem listed, the secret never quoted. */
function readClient(input: unknown): { clientId: string; clientSecret: string | null } {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw validation('Send the client as {"clientId": "...", "clientSecret": "..."}; leave out `clientSecret` for a public client (PKCE only).');
  }
  const v = input as Record<string, unknown>;
  const errors: FieldError[] = [];
  for (const key of Object.keys(v)) {
    if (!CLIENT_INPUT_KEYS.includes(key)) errors.push({ path: `/${key.slice(0, 64)}`, message: `Unknown key ${quotedName(key)}: the client takes \`clientId\` and \`clientSecret\`.` });
  }
  const { clientId, clientSecret } = v;
  if (typeof clientId !== 'string' || clientId.trim() === '') {
    errors.push({ path: '/clientId', message: 'Give the `clientId` the provider issued to the add-on, as a string.' });
  } else if (clientId.length > ACCOUNT_LIMITS.clientId) {
    errors.push({ path: '/clientId', message: `The client id is too long: at most ${ACCOUNT_LIMITS.clientId} characters.` });
  } else if (!VSCHAR.test(clientId) || clientId !== clientId.trim()) {
    errors.push({ path: '/clientId', message: 'The client id must be printable ASCII, without leading or trailing spaces.' });
  }
  if (clientSecret !== undefined && clientSecret !== null) {
    const problem = clientSecret === '' ? 'is empty: leave it out for a public client (PKCE only)' : settingValueProblem({ kind: 'secret' }, clientSecret);
    if (problem) errors.push({ path: '/clientSecret', message: `The client secret ${problem}.` });
  }
  if (errors.length) throw new ToolportError('VALIDATION', errors.length === 1 ? errors[0]!.message : 'The client is not valid.', { errors });
  return { clientId: clientId as string, clientSecret: (clientSecret as string | null | undefined) ?? null };
}

/** Without `clientSecret` it is a public client (PKCE only). */
export async function setAddonOauthClient({ ctx, addonId, provider, input }: { ctx: Ctx; addonId: string; provider: string; input: unknown }) {
  const account = await declaredAccount(ctx, addonId, provider);
  const { clientId, clientSecret } = readClient(input);
  const values = {
    clientId,
    clientSecretEnc: clientSecret === null ? null : ctx.svc.secrets.addonOauthClientBox.seal(clientSecret),
    updatedAt: ctx.svc.clock.now(),
  };
  const [row] = await ctx.svc.db
    .insert(addonOauthClients)
    .values({ addonId, provider, ...values })
    .onConflictDoUpdate({ target: [addonOauthClients.addonId, addonOauthClients.provider], set: values })
    .returning();
  return clientView(ctx.svc, addonId, account, row);
}

/** `DELETE /api/addons/{id}/accounts/{provider}/client`: forgets the client and its secret. */
export async function deleteAddonOauthClient({ ctx, addonId, provider }: { ctx: Ctx; addonId: string; provider: string }) {
  const account = await declaredAccount(ctx, addonId, provider);
  const gone = await ctx.svc.db
    .delete(addonOauthClients)
    .where(and(eq(addonOauthClients.addonId, addonId), eq(addonOauthClients.provider, provider)))
    .returning({ provider: addonOauthClients.provider });
  if (!gone.length) throw new ToolportError('NOT_FOUND', `There is no OAuth client for "${account.title}" to delete.`);
}
