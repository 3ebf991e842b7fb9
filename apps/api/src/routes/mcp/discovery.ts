import { registryNamespace, signInFor, type Services } from '@toolport/core';
import { serverIcons } from './listing';
import { SERVER_CAPABILITIES, SERVER_INFO, SUPPORTED_REVISIONS } from './revisions';
import { TASKS_EXTENSION } from './tasks';

/*
 * What Toolport says of itself before an app signs in: 2026-07-28's server/discover (modern.ts) and
 * the server cards (SEP-2127, routes/server-cards.ts) are both read from here, so they cannot
 * disagree; the cards' sign-in is the OAuth metadata's own (core's signInFor).
 */

/** server/discover's revisions, capabilities and identity: the same for every person and app. */
export const DISCOVERY = {
  supportedVersions: SUPPORTED_REVISIONS,
  capabilities: { ...SERVER_CAPABILITIES, extensions: { [TASKS_EXTENSION]: {} } },
  serverInfo: SERVER_INFO,
} as const;

const SERVER_CARD_SCHEMA = 'https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json';
/** At most 100 characters (the card's schema). */
const DESCRIPTION = 'Tools from the add-ons each person switches on, with approvals before anything destructive runs.';

/**
 * A server card for one person's MCP URL, or without a key the deployment's own (its URL a template).
 * No tools and nothing of the person: the same card for any well-formed key, real or made up, as the
 * protected resource metadata is; a malformed key is NOT_FOUND.
 */
export function serverCard(svc: Services, userKey?: string) {
  const signIn = signInFor(svc, userKey);
  const template = userKey === undefined;
  return {
    $schema: SERVER_CARD_SCHEMA,
    name: `${registryNamespace(svc.config.publicUrl)}/toolport`,
    title: DISCOVERY.serverInfo.name,
    version: DISCOVERY.serverInfo.version,
    description: DESCRIPTION,
    websiteUrl: svc.config.publicUrl,
    icons: serverIcons(svc),
    remotes: [
      {
        type: 'streamable-http' as const,
        url: signIn.resource,
        ...(template
          ? { variables: { userKey: { description: `The key in your own MCP URL: sign in at ${svc.config.publicUrl} and copy it from Home.`, isRequired: true } } }
          : {}),
        supportedProtocolVersions: DISCOVERY.supportedVersions,
      },
    ],
    // The card's schema has no field for these; `_meta` is its extension point.
    _meta: { 'toolport/oauth': signIn, 'toolport/capabilities': DISCOVERY.capabilities },
  };
}
