import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';
import type { Client as Person } from './http';
import { consent, TestOAuthProvider, type ConsentChoice } from './mcp';

/** How the v2 client picks its revision: `auto` probes with server/discover (2026-07-28 here), `legacy` runs the 2025 handshake. */
export type Negotiation = 'auto' | 'legacy';

type ClientOptions = NonNullable<ConstructorParameters<typeof Client>[1]>;

const clientFor = (name: string, mode: Negotiation, capabilities?: ClientOptions['capabilities']) =>
  new Client({ name, version: '1.0.0' }, { ...(mode === 'auto' ? { versionNegotiation: { mode: 'auto' } } : {}), ...(capabilities ? { capabilities } : {}) });

/**
 * The SDK v2 client (`@modelcontextprotocol/client`) connected to a person's MCP URL through its
 * own OAuth flow, the person allowing it on the real consent page (as helpers/mcp.ts `connectApp`
 * does for v1).
 */
export async function connectAppV2(
  mcpUrl: string,
  person: Person,
  opts: {
    name?: string;
    mode?: Negotiation;
    provider?: TestOAuthProvider;
    choice?: ConsentChoice;
    capabilities?: ClientOptions['capabilities'];
    /** Handlers set before connecting (elicitation, say). */
    prepare?: (client: Client) => void;
  } = {},
) {
  const mode = opts.mode ?? 'auto';
  const provider = opts.provider ?? new TestOAuthProvider(opts.name ?? `Test App v2 (${mode})`);
  const first = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
  await assert.rejects(clientFor(provider.name, mode).connect(first), (err: unknown) => err instanceof UnauthorizedError);
  assert.ok(provider.authorizationUrl, 'the client was sent to authorize');
  const back = await consent(person, provider.authorizationUrl, 'allow', opts.choice);
  await first.finishAuth(back.searchParams.get('code')!, back.searchParams.get('iss') ?? undefined);
  const client = clientFor(provider.name, mode, opts.capabilities);
  opts.prepare?.(client);
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider }));
  return { client, provider };
}
