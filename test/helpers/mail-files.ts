import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface ReceivedMail {
  to: string[];
  subject: string;
  /** The text body, quoted-printable undone. */
  text: string;
  raw: string;
}

/** Quoted-printable as nodemailer writes it: soft line breaks and =XX bytes. */
function unQuote(body: string): string {
  const joined = body.replace(/=\r?\n/g, '');
  return Buffer.from(joined.replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1').toString('utf8');
}

export function parse(raw: string, to: string[]): ReceivedMail {
  const split = raw.search(/\r?\n\r?\n/);
  const head = raw.slice(0, split).replace(/\r?\n[ \t]+/g, ' ');
  const body = raw.slice(split).replace(/^\r?\n\r?\n/, '');
  const header = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(head)?.[1]?.trim() ?? '';
  const qp = /quoted-printable/i.test(header('Content-Transfer-Encoding'));
  return { to, subject: header('Subject'), text: qp ? unQuote(body) : body, raw };
}

/** The one Toolport link in a mail's text. */
export function linkIn(mail: ReceivedMail): string {
  const link = /https?:\/\/\S+#token=[A-Za-z0-9_-]+/.exec(mail.text)?.[0];
  if (!link) throw new Error(`no link in the mail "${mail.subject}": ${mail.text}`);
  return link;
}

/** Where the Toolports this test process started write mail without SMTP_URL (target.ts, private-services.ts). */
export const mailDirs = new Set<string>();

/** The SMTP mailboxes (mailbox.ts) this test process runs: mail to a Toolport with SMTP_URL arrives there. */
export const mailboxes = new Set<() => ReceivedMail[]>();

let spare: string | undefined;
/** A mail directory for a process started with neither DATA_DIR nor MAIL_DIR, which would write under the checkout. */
export function spareMailDir() {
  spare ??= mkdtempSync(path.join(os.tmpdir(), 'toolport-mail-'));
  mailDirs.add(spare);
  return spare;
}

/**
 * Confirms `person`'s email the way they would: the link Toolport wrote to an .eml file for them
 * (SMTP_URL unset), opened. Waits for the mail, which is sent behind the sign-up's answer.
 */
export async function confirmEmail(person: { client: { post(path: string, body: unknown): Promise<{ status: number; text: string }> }; email: string }) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const mail = newestMailTo(person.email, /Confirm your email/);
    if (mail) {
      const token = new URL(linkIn(mail)).hash.replace(/^#token=/, '');
      const res = await person.client.post('/api/session/verify-email', { token });
      if (res.status !== 200) throw new Error(`confirming ${person.email} failed: ${res.status} ${res.text}`);
      return;
    }
    if (Date.now() > deadline) throw new Error(`no confirmation mail to ${person.email} under ${[...mailDirs].join(', ')} or in ${mailboxes.size} mailbox(es)`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function newestMailTo(to: string, subject: RegExp): ReceivedMail | undefined {
  const found: Array<{ name: string; mail: ReceivedMail }> = [];
  for (const mailDir of mailDirs) {
    if (!existsSync(mailDir)) continue;
    for (const name of readdirSync(mailDir)) {
      const raw = readFileSync(path.join(mailDir, name), 'utf8');
      if (!new RegExp(`^To: ${to.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'im').test(raw)) continue;
      const mail = parse(raw, [to]);
      if (subject.test(mail.subject)) found.push({ name, mail });
    }
  }
  for (const received of mailboxes) {
    const mine = received().filter((m) => m.to.includes(to.toLowerCase()) && subject.test(m.subject));
    if (mine.length) return mine.at(-1);
  }
  // File names begin with the time written: the newest link is the one that works.
  return found.sort((a, b) => a.name.localeCompare(b.name)).at(-1)?.mail;
}
