import { Client, newPerson } from '../../test/helpers/http';
import { connectApp } from '../../test/helpers/mcp';
import { request } from './http';

export type Person = Awaited<ReturnType<typeof newPerson>>;

export { newPerson };

async function ok(res: Promise<{ status: number; text: string }>, want: number[], what: string) {
  const r = await res;
  if (!want.includes(r.status)) throw new Error(`${what}: ${r.status} ${r.text.slice(0, 400)}`);
  return r as any;
}

/** A person with AI apps on, signed up through the dashboard API. */
export async function person(baseUrl: string, label: string): Promise<Person> {
  const p = await newPerson(baseUrl, label);
  await ok(p.client.patch('/api/settings', { aiApps: true }), [200], 'aiApps on');
  return p;
}

/** Registers a manifest as the person (their own add-on), installs it and switches every tool on. */
export async function installAddon(p: Person, manifest: any): Promise<string> {
  const created = await ok(p.client.post('/api/addons', manifest), [201], `register ${manifest.id}`);
  await ok(p.client.post('/api/installs', { addon: manifest.id }), [201], `install ${manifest.id}`);
  const tools = Object.fromEntries(manifest.tools.map((t: any) => [t.name, true]));
  await ok(p.client.patch(`/api/installs/${manifest.id}`, { tools }), [200], `switch on ${manifest.id}`);
  return created.body.signingSecret as string;
}

/** A generated add-on of `count` read-only tools, each with two arguments, like a typical catalog entry. */
export function generatedManifest(id: string, webhook: string, count: number) {
  return {
    id,
    name: `Catalog ${id}`,
    description: 'A generated add-on for the tools/list benchmark.',
    webhook,
    tools: Array.from({ length: count }, (_, i) => ({
      name: `lookup_${String(i).padStart(2, '0')}`,
      title: `Look up item ${i}`,
      summary: `Finds items of kind ${i} matching the query and returns their ids, names and a short preview of each.`,
      readOnly: true,
      arguments: [
        { name: 'query', summary: 'Words to look for.', kind: { text: { maxLength: 200 } } },
        { name: 'limit', summary: 'How many items to return.', kind: { number: { minimum: 1, maximum: 50, whole: true } }, required: false },
      ],
    })),
  };
}

export interface AppToken {
  mcpUrl: string;
  accessToken: string;
  refreshToken: string;
  clientId: string;
  at: number;
  baseUrl: string;
}

/** DCR + authorize + the real consent form + code exchange, through the SDK's own OAuth client. */
export async function connect(baseUrl: string, p: Person, name = 'Bench App'): Promise<AppToken> {
  const { client, provider } = await connectApp(p.user.mcpUrl, p.client, { name });
  await client.close().catch(() => {});
  return {
    mcpUrl: p.user.mcpUrl,
    accessToken: provider.saved!.access_token,
    refreshToken: provider.saved!.refresh_token!,
    clientId: (provider.client as { client_id: string }).client_id,
    at: Date.now(),
    baseUrl,
  };
}

/** Access tokens live 10 minutes: refresh (the real refresh grant) when older than 4. */
export async function fresh(t: AppToken): Promise<AppToken> {
  if (Date.now() - t.at < 4 * 60_000) return t;
  const res = await request(
    'POST',
    `${t.baseUrl}/oauth/token`,
    { 'content-type': 'application/x-www-form-urlencoded' },
    new URLSearchParams({ grant_type: 'refresh_token', refresh_token: t.refreshToken, client_id: t.clientId }).toString(),
  );
  if (res.status !== 200) throw new Error(`refresh failed: ${res.status} ${res.text}`);
  const body = JSON.parse(res.text);
  t.accessToken = body.access_token;
  t.refreshToken = body.refresh_token ?? t.refreshToken;
  t.at = Date.now();
  return t;
}

export const cookieOf = (c: Client) => [...c.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
