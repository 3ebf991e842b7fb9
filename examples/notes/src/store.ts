import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface Note {
  id: string;
  title: string;
  text: string;
  createdAt: string;
  /** The call that created it: a retried add_note returns this note instead of adding another. */
  callId: string;
}

export const MAX_NOTES_PER_USER = 1000;
const TITLE_MAX = 80;
const PREVIEW_MAX = 140;

const cut = (s: string, max: number) => {
  const chars = Array.from(s);
  return chars.length <= max ? s : `${chars.slice(0, max - 1).join('').trimEnd()}…`;
};

/** The first non-empty line, without Markdown heading marks. */
function titleOf(text: string): string {
  const line = text.split('\n').map((l) => l.replace(/^\s*#+\s*/, '').trim()).find(Boolean);
  return line ? cut(line, TITLE_MAX) : 'Untitled';
}

export function previewOf(text: string): string {
  const lines = text.split('\n');
  const first = lines.findIndex((l) => l.trim());
  const rest = lines.slice(first + 1).join(' ').replace(/\s+/g, ' ').trim();
  return cut(rest, PREVIEW_MAX);
}

const fold = (s: string) => s.normalize('NFC').toLocaleLowerCase('en');

/**
 * Notes per person, kept in memory and, when `file` is given, written to that JSON file after
 * every change. Every method takes the person's id: nothing crosses from one person to another.
 */
export class NoteStore {
  private byUser = new Map<string, Note[]>();

  constructor(private readonly file?: string) {
    if (file) {
      try {
        const saved = JSON.parse(readFileSync(file, 'utf8')) as Record<string, Note[]>;
        for (const [user, notes] of Object.entries(saved)) this.byUser.set(user, notes);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
  }

  private notesOf(userId: string): Note[] {
    let notes = this.byUser.get(userId);
    if (!notes) {
      notes = [];
      this.byUser.set(userId, notes);
    }
    return notes;
  }

  private save() {
    if (!this.file) return;
    mkdirSync(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(Object.fromEntries(this.byUser)), { mode: 0o600 });
    renameSync(tmp, this.file);
  }

  /** Newest first; every word of `query` must appear in the title or the text (case-insensitive). */
  search(userId: string, query = ''): Note[] {
    const words = fold(query).split(/\s+/).filter(Boolean);
    return this.notesOf(userId)
      .filter((n) => {
        const hay = fold(`${n.title}\n${n.text}`);
        return words.every((w) => hay.includes(w));
      })
      .reverse();
  }

  get(userId: string, id: string): Note | undefined {
    return this.notesOf(userId).find((n) => n.id === id);
  }

  /** Adds a note, or returns the one this call already added (`created: false`). */
  add(userId: string, text: string, callId: string, now = new Date()): { note: Note; created: boolean } {
    const notes = this.notesOf(userId);
    const earlier = notes.find((n) => n.callId === callId);
    if (earlier) return { note: earlier, created: false };
    if (notes.length >= MAX_NOTES_PER_USER) throw new RangeError('full');
    const note: Note = { id: `note_${randomBytes(9).toString('base64url')}`, title: titleOf(text), text, createdAt: now.toISOString(), callId };
    notes.push(note);
    this.save();
    return { note, created: true };
  }

  delete(userId: string, id: string): Note | undefined {
    const notes = this.notesOf(userId);
    const i = notes.findIndex((n) => n.id === id);
    if (i < 0) return undefined;
    const [gone] = notes.splice(i, 1);
    this.save();
    return gone;
  }
}
