import { AddOnError, defineAddon, text, tool } from '@toolport/addon-kit';
import { MAX_NOTES_PER_USER, NoteStore, previewOf } from './store';

/** Where `npm run notes` listens by default; addon.json carries this URL. */
export const DEFAULT_WEBHOOK = 'http://localhost:8787/webhook';
const SEARCH_LIMIT = 20;

const when = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;

/**
 * The Notes add-on of DESIGN.md. Notes are scoped by `ctx.userId` (the pseudonymous `user.id` of
 * the delivery); no argument names a person.
 */
export function createNotesAddon(store = new NoteStore(), webhook = DEFAULT_WEBHOOK) {
  return defineAddon({
    id: 'notes',
    name: 'Notes',
    description: 'Your notes, searchable.',
    webhook,
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
      add_note: tool({
        title: 'Add a note',
        summary: "Saves a new note; its first line is the title. Returns the new note's id and title.",
        arguments: {
          text: text({ maxLength: 5000, summary: 'The note, in Markdown; the first line becomes its title.' }),
        },
        run: ({ text: body }, ctx) => {
          if (!body.trim()) throw new AddOnError('The note is empty; give it some text.');
          try {
            // The call id makes a retried delivery return the note it already added.
            const { note } = store.add(ctx.userId, body, ctx.callId);
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
    },
  });
}

/** The Notes add-on as addon.json describes it (in-memory store, default webhook). */
export const notesAddon = createNotesAddon();
