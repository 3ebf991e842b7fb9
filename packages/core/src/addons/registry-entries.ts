import { and, asc, eq, isNull } from 'drizzle-orm';
import type { Ctx } from '../context';
import { ToolportError } from '../errors';
import { addons, users } from '../db/schema/index';
import { signInFor } from '../oauth/metadata';
import type { Services } from '../services';

/*
 * Approved public listings as MCP registry entries (server.json, the registry's 2025-12-11 schema),
 * so a registry or a client's catalog can list them: each points at Toolport, never at the add-on's
 * webhook, since Toolport is what an app connects to.
 */

const SERVER_JSON_SCHEMA = 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json';
/** The registry's limit on `description`, in characters (the manifest allows 300). */
const DESCRIPTION_MAX = 100;
/** The one `_meta` key the official registry keeps (it drops the others on publishing). */
const PUBLISHER_PROVIDED = 'io.modelcontextprotocol.registry/publisher-provided';

/**
 * The deployment's registry namespace: its public host reversed (toolport.example.io becomes
 * io.example.toolport), as registries name servers after a domain their publisher proves to own.
 */
export function registryNamespace(publicUrl: string): string {
  return new URL(publicUrl).hostname.split('.').reverse().join('.').replace(/[^a-zA-Z0-9.-]/g, '-');
}

/** The manifest's description within the registry's 100 characters, cut at a word; a blank one says what the add-on is. */
function shortDescription(name: string, description: string): string {
  const text = description.trim() || `${name}, an add-on served through Toolport.`;
  const chars = Array.from(text);
  if (chars.length <= DESCRIPTION_MAX) return text;
  const cut = chars.slice(0, DESCRIPTION_MAX - 1).join('');
  const atWord = cut.replace(/\s+\S*$/, '');
  return `${atWord.length > DESCRIPTION_MAX / 2 ? atWord : cut}…`;
}

const listed = and(isNull(addons.deletedAt), eq(addons.visibility, 'public'), eq(addons.listing, 'approved'));
const entryColumns = { id: addons.id, name: addons.name, description: addons.description, version: addons.version, publisher: users.displayName };
type EntryRow = { id: string; name: string; description: string; version: number; publisher: string | null };

function entryOf(svc: Services, row: EntryRow) {
  const { publicUrl } = svc.config;
  const installPage = `${publicUrl}/addons/${row.id}`;
  return {
    $schema: SERVER_JSON_SCHEMA,
    name: `${registryNamespace(publicUrl)}/${row.id}`,
    title: row.name,
    description: shortDescription(row.name, row.description),
    version: String(row.version),
    websiteUrl: installPage,
    // Each person's MCP URL holds their own key, so the entry names it as a variable a client asks
    // for (remotes' URL variables): the key is shown on Toolport's Home page once signed in.
    remotes: [
      {
        type: 'streamable-http' as const,
        url: signInFor(svc).resource,
        variables: {
          userKey: {
            description: `The key in your own MCP URL on ${new URL(publicUrl).host}: install ${row.name} at ${installPage}, then copy your MCP URL from Home.`,
            isRequired: true,
          },
        },
      },
    ],
    _meta: {
      [PUBLISHER_PROVIDED]: {
        addon: row.id,
        // The name an operator checked when approving the listing (listings.ts decideListing).
        publisher: { name: row.publisher, verifiedBy: 'operator' },
        installPage,
      },
    },
  };
}

/** `GET /api/catalog/{addonId}/server.json`: only for an approved public listing; any other id is one no registry may list. */
export async function getRegistryEntry({ ctx, addonId }: { ctx: Ctx; addonId: string }) {
  const [row] = await ctx.svc.db.select(entryColumns).from(addons).innerJoin(users, eq(users.id, addons.ownerId)).where(and(listed, eq(addons.id, addonId)));
  if (!row) {
    throw new ToolportError('NOT_FOUND', 'No add-on listed for everyone has that id: only add-ons an operator approved for the public catalog have a registry entry.');
  }
  return entryOf(ctx.svc, row);
}

/** `GET /api/catalog/servers.json`: every approved public listing, in the registry API's list shape. */
export async function listRegistryEntries({ ctx }: { ctx: Ctx }) {
  const rows = await ctx.svc.db.select(entryColumns).from(addons).innerJoin(users, eq(users.id, addons.ownerId)).where(listed).orderBy(asc(addons.id));
  return { servers: rows.map((row) => ({ server: entryOf(ctx.svc, row) })), metadata: { count: rows.length } };
}
