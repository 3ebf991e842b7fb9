import { and, eq, gt, isNull, sql } from 'drizzle-orm';
import { sha256 } from '../crypto';
import { emailLinks } from '../db/schema/index';
import { ToolportError } from '../errors';
import { newToken } from '../ids';
import type { Services } from '../services';

export type LinkPurpose = 'verify' | 'reset';

/** A reset link is short-lived (it signs in); a verification link proves only the address. */
const LINK_TTL_MS: Record<LinkPurpose, number> = { verify: 24 * 3600_000, reset: 30 * 60_000 };
const PREFIX: Record<LinkPurpose, string> = { verify: 'tpv_', reset: 'tpr_' };
/** The dashboard's page that reads the token from the fragment, which no server log or Referer carries. */
const PAGE: Record<LinkPurpose, string> = { verify: '/verify-email', reset: '/reset-password' };

/** A new one-time link for `user`; earlier unused links of the same purpose stop working. */
export async function issueLink(svc: Services, user: { id: string; email: string }, purpose: LinkPurpose): Promise<string> {
  const token = newToken(PREFIX[purpose]);
  const now = svc.clock.now();
  // The account's links of a day ago go (issuing is rate-limited, so its rows stay few).
  const dayAgo = new Date(now.getTime() - 24 * 3600_000).toISOString();
  await svc.db.delete(emailLinks).where(and(eq(emailLinks.userId, user.id), sql`coalesce(${emailLinks.usedAt}, ${emailLinks.expiresAt}) < ${dayAgo}::timestamptz`));
  await svc.db
    .update(emailLinks)
    .set({ usedAt: now })
    .where(and(eq(emailLinks.userId, user.id), eq(emailLinks.purpose, purpose), isNull(emailLinks.usedAt)));
  await svc.db.insert(emailLinks).values({
    tokenHash: sha256(token),
    userId: user.id,
    purpose,
    email: user.email,
    createdAt: now,
    expiresAt: new Date(now.getTime() + LINK_TTL_MS[purpose]),
  });
  return `${svc.config.publicUrl}${PAGE[purpose]}#token=${token}`;
}

const INVALID: Record<LinkPurpose, string> = {
  verify: 'This verification link is not valid. Open the newest link Toolport sent you, or ask for a new one on your Home page.',
  reset: 'This reset link is not valid. Open the newest link Toolport sent you, or ask for a new one.',
};

/**
 * Uses the link once: one conditional update, so two tabs opening it race to one winner. Refused
 * with why when used, expired or unknown (whoever holds the token may know which).
 */
export async function useLink(svc: Services, token: unknown, purpose: LinkPurpose): Promise<{ userId: string; email: string }> {
  if (typeof token !== 'string' || !token.startsWith(PREFIX[purpose]) || token.length > 100) throw new ToolportError('NOT_FOUND', INVALID[purpose]);
  const now = svc.clock.now();
  const hash = sha256(token);
  const [used] = await svc.db
    .update(emailLinks)
    .set({ usedAt: now })
    .where(and(eq(emailLinks.tokenHash, hash), eq(emailLinks.purpose, purpose), isNull(emailLinks.usedAt), gt(emailLinks.expiresAt, now)))
    .returning({ userId: emailLinks.userId, email: emailLinks.email });
  if (used) return used;
  const [row] = await svc.db.select().from(emailLinks).where(and(eq(emailLinks.tokenHash, hash), eq(emailLinks.purpose, purpose)));
  if (!row) throw new ToolportError('NOT_FOUND', INVALID[purpose]);
  const again = purpose === 'reset' ? 'Ask for a new reset link.' : 'Ask for a new one on your Home page.';
  if (row.usedAt) throw new ToolportError('GONE', `This link was used already, and works once. ${again}`);
  throw new ToolportError('GONE', `This link has expired (it works for ${purpose === 'reset' ? '30 minutes' : '24 hours'}). ${again}`);
}

/** Every unused link of the account, after its password changed (an older reset link must not undo it). */
export async function voidLinks(svc: Services, userId: string) {
  await svc.db.update(emailLinks).set({ usedAt: svc.clock.now() }).where(and(eq(emailLinks.userId, userId), isNull(emailLinks.usedAt)));
}

/** Mail goes out behind the answer: how long sending takes must not tell whether an account exists. */
export function sendInBackground(svc: Services, mail: { to: string; subject: string; text: string }) {
  void svc.mail.send(mail).catch((err: unknown) => svc.log.error('cannot send mail', { err, subject: mail.subject }));
}

export const mailTexts = {
  verify: (link: string) => ({
    subject: 'Confirm your email for Toolport',
    text: `Open this link to confirm that this email is yours:\n\n${link}\n\nIt works once, for 24 hours. If you did not create a Toolport account, ignore this mail.\n`,
  }),
  reset: (link: string) => ({
    subject: 'Reset your Toolport password',
    text: `Someone asked to reset the password of the Toolport account with this email. To choose a new one, open:\n\n${link}\n\nIt works once, for 30 minutes, and signs you out everywhere else. If it was not you, ignore this mail: your password stays as it is.\n`,
  }),
  newBrowser: (browser: string, network: string) => ({
    subject: 'New sign-in to your Toolport account',
    text: `Your Toolport account was just signed in to from a browser it had not seen before: ${browser}, from ${network}. If it was you, nothing needs doing. If not, reset your password from the sign-in page and sign the other session out on your Home page.\n`,
  }),
  passwordChanged: () => ({
    subject: 'Your Toolport password was changed',
    text: 'The password of your Toolport account was just changed, and every other session was signed out. If it was not you, reset your password from the sign-in page at once.\n',
  }),
};
