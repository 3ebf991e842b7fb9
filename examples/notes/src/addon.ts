import { AddOnError, defineAddon, setting, settings, text, tool } from '@toolport/addon-kit';
import { MAX_NOTES_PER_USER, NoteStore, previewOf } from './store';

/** Where `npm run notes` listens by default; addon.json carries this URL. */
export const DEFAULT_WEBHOOK = 'http://localhost:8787/webhook';
const SEARCH_LIMIT = 20;

/**
 * Notes Cloud, the service whose account `export_notes` acts on (manifest `accounts`). The URLs
 * are placeholders: replace them with your provider's (README.md, "Connected account").
 */
export const NOTES_CLOUD = {
  provider: 'notes_cloud',
  title: 'Notes Cloud',
  authorizationUrl: 'https://notes-cloud.example.com/oauth/authorize',
  tokenUrl: 'https://notes-cloud.example.com/oauth/token',
  revocationUrl: 'https://notes-cloud.example.com/oauth/revoke',
  scopes: ['openid', 'profile', 'notes'],
} as const;
/** The provider's OpenID Connect userinfo endpoint (a placeholder too), which `export_notes` asks who the account is. */
export const NOTES_CLOUD_USERINFO = 'https://notes-cloud.example.com/oauth/userinfo';
/** The exported document's most bytes, so the answer stays under Toolport's 64 KB. */
const EXPORT_MAX_BYTES = 48 * 1024;
/** A userinfo answer longer than this is not one. */
const USERINFO_MAX_CHARS = 64 * 1024;

/**
 * Who the connected Notes Cloud account is: its `name`, else its `sub`, from the provider's
 * userinfo endpoint asked with the account's access token. A token the provider refuses is a
 * sentence for the person (reconnect); anything else unexpected is the add-on failing.
 */
async function cloudAccountName(userinfoUrl: string, accessToken: string, signal: AbortSignal): Promise<string> {
  // No redirect is followed: the token goes to this URL only.
  const res = await fetch(userinfoUrl, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' }, redirect: 'error', signal });
  if (res.status === 401 || res.status === 403) {
    await res.body?.cancel();
    throw new AddOnError("Notes Cloud no longer accepts the connected account: reconnect Notes Cloud on the add-on's page in Toolport, then try again.");
  }
  const text = await res.text();
  if (!res.ok || text.length > USERINFO_MAX_CHARS) throw new Error(`Notes Cloud's userinfo answered ${res.status} (${text.length} characters)`);
  const info = JSON.parse(text) as { sub?: unknown; name?: unknown };
  const given = [info.name, info.sub].find((v) => typeof v === 'string' && v.trim()) as string | undefined;
  if (!given) throw new Error("Notes Cloud's userinfo names no account (no name, no sub)");
  // One line of at most 100 characters: it heads the document.
  return Array.from(given.replace(/\s+/g, ' ').trim()).slice(0, 100).join('');
}

/** The person's settings for their install: one optional text, typed in `ctx.settings`. */
export const notesSettings = settings({
  signature: setting.text({ title: 'Signature', summary: 'Added at the end of each note you add, for example your initials.' }),
});

const when = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;

/**
 * The Notes add-on of DESIGN.md. Notes are scoped by `ctx.userId` (the pseudonymous `user.id` of
 * the delivery); no argument names a person.
 */
export function createNotesAddon(store = new NoteStore(), webhook = DEFAULT_WEBHOOK, cloud = { userinfoUrl: NOTES_CLOUD_USERINFO }) {
  return defineAddon({
    id: 'notes',
    name: 'Notes',
    description: 'Your notes, searchable.',
    webhook,
    settings: notesSettings,
    accounts: [NOTES_CLOUD],
    tools: {
      search_notes: tool({
        title: 'Search notes',
        summary: `Finds notes containing every word of the query, newest first, and returns each note's id, title and preview (at most ${SEARCH_LIMIT}).`,
        readOnly: true,
        arguments: {
          query: text({ maxLength: 200, summary: 'Words to look for; leave it out to list the newest notes.', required: false }),
        },
        run: ({ query }, ctx) => {
          const found = store.search(ctx.userId, query);
          return {
            json: {
              notes: found.slice(0, SEARCH_LIMIT).map((n) => ({ id: n.id, title: n.title, preview: previewOf(n.text), createdAt: n.createdAt })),
              total: found.length,
            },
          };
        },
      }),
      add_note: notesSettings.tool({
        title: 'Add a note',
        summary: "Saves a new note; its first line is the title. Returns the new note's id and title.",
        // The note limit is checked, then the note written: one person's adds must not overlap.
        exclusive: true,
        arguments: {
          text: text({ maxLength: 5000, summary: 'The note, in Markdown; the first line becomes its title.' }),
        },
        run: ({ text: body }, ctx) => {
          if (!body.trim()) throw new AddOnError('The note is empty; give it some text.');
          const signature = ctx.settings.signature?.trim();
          try {
            // The call id makes a retried delivery return the note it already added.
            const { note } = store.add(ctx.userId, signature ? `${body}\n\n${signature}` : body, ctx.callId);
            return { json: { id: note.id, title: note.title } };
          } catch (err) {
            if (err instanceof RangeError) throw new AddOnError(`You have ${MAX_NOTES_PER_USER} notes, the most kept; delete some first.`);
            throw err;
          }
        },
      }),
      delete_note: tool({
        title: 'Delete a note',
        summary: 'Deletes one note by id (search_notes gives ids) and returns the deleted note\'s title.',
        destructive: true,
        arguments: {
          id: text({ maxLength: 64, summary: "The note's id, as search_notes returns it." }),
        },
        // An unknown id deletes nothing, so there is nothing to approve: null skips the approval
        // and `run` answers with a sentence saying the note does not exist.
        confirm: ({ id }, ctx) => {
          const note = store.get(ctx.userId, id);
          if (!note) return null;
          return {
            message: `Delete the note “${note.title}”?`,
            info: [
              { name: 'Note', value: note.title },
              { name: 'Created', value: when(note.createdAt) },
            ],
            style: 'destructive',
          };
        },
        run: ({ id }, ctx) => {
          const gone = store.delete(ctx.userId, id);
          if (!gone) throw new AddOnError(`There is no note with id "${id}"; search_notes lists your notes and their ids.`);
          return `Deleted the note “${gone.title}”.`;
        },
      }),
      // The one tool that needs the person's Notes Cloud account: Toolport sends its token in
      // this tool's deliveries only, and asks the person to connect it when they have not.
      export_notes: tool({
        title: 'Export notes',
        summary: `Exports your newest notes (at most ${SEARCH_LIMIT} and 48 KB, or those matching a query) as one Markdown document for your Notes Cloud account, and returns the document, the account's name and how many notes it holds.`,
        readOnly: true,
        accounts: ['notes_cloud'],
        arguments: {
          query: text({ maxLength: 200, summary: 'Words the exported notes must contain; leave it out to export the newest.', required: false }),
        },
        run: async ({ query }, ctx) => {
          const account = await cloudAccountName(cloud.userinfoUrl, ctx.accounts.notes_cloud.accessToken, ctx.signal);
          const found = store.search(ctx.userId, query);
          // Newest first, as many as fit in one answer (Toolport takes results of up to 64 KB).
          let markdown = `# Notes of ${account}`;
          let bytes = Buffer.byteLength(markdown);
          let exported = 0;
          for (const n of found.slice(0, SEARCH_LIMIT)) {
            const part = `\n\n## ${n.title}\n\n${n.text}`;
            const size = Buffer.byteLength(part);
            if (bytes + size > EXPORT_MAX_BYTES) break;
            markdown += part;
            bytes += size;
            exported++;
          }
          return { json: { account, exported, total: found.length, markdown } };
        },
      }),
    },
  });
}

/** The Notes add-on as addon.json describes it (in-memory store, default webhook). */
export const notesAddon = createNotesAddon();
