import { randomBytes } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import { z } from 'zod';
import type { Ctx } from '../context';
import { personId } from '../context';
import { dummyPasswordHash, hashPassword, verifyPassword } from '../crypto';
import { conflict, limitExceeded, ToolportError, unauthorized, validation } from '../errors';
import { inputObject, parseInput } from '../input';
import { newId } from '../ids';
import type { Services } from '../services';
import { loginThrottle, sessions, users } from '../db/schema/index';
import { hasListedAddon, publisherName } from '../addons/listings';
import { issueLink, mailTexts, sendInBackground, useLink, voidLinks } from './email-links';
import { browserOf, createSession, endOtherSessions, networkOf, type Device } from './sessions';
import { deviceCookieFor, knownDevice } from './devices';
import { executedRows } from '../db/client';


export interface PublicUser {
  id: string;
  email: string;
  mcpUrl: string;
  aiApps: boolean;
}

export const mcpUrlFor = (svc: Services, userKey: string) => `${svc.config.publicUrl}/u/${userKey}/mcp`;
const newUserKey = () => randomBytes(18).toString('base64url');

export function toPublic(svc: Services, row: typeof users.$inferSelect): PublicUser {
  return { id: row.id, email: row.email, mcpUrl: mcpUrlFor(svc, row.userKey), aiApps: row.aiApps };
}

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,190}\.[^\s@]{1,63}$/;
const INCOMPLETE = 'The sign-in details are incomplete.';

const credentials = inputObject({
  email: z.string({ message: 'Give a valid email address.' }).trim().toLowerCase().regex(EMAIL, 'Give a valid email address.'),
  password: z.string({ message: 'Give a password.' }),
});
/** `POST /api/session/signup` and `/login`. */
export type Credentials = z.input<typeof credentials>;

const newPassword = credentials.shape.password
  .refine((p) => p.length >= 10, { message: 'Use at least 10 characters.', params: { sentence: 'The password is too short.' } })
  .refine((p) => p.length <= 256, { message: 'Use at most 256 characters.', params: { sentence: 'The password is too long.' } });
const signupInput = credentials.extend({ password: newPassword });

const TAKEN = 'An account with this email already exists.';
const takenField = { path: '/email', message: 'An account with this email already exists: sign in instead.' };

const emailTaken = async (svc: Ctx['svc'], email: string) =>
  (await svc.db.select({ id: users.id }).from(users).where(eq(users.email, email)).limit(1)).length > 0;

/**
 * What sign-up lacks, in sign-up's words: each field that is missing or wrong and what to give
 * there ("To create your account, give your email and a password of at least 10 characters.").
 */
function signupSentence(input: unknown): string {
  const given = (input && typeof input === 'object' ? input : {}) as { email?: unknown; password?: unknown };
  const wants: string[] = [];
  const email = typeof given.email === 'string' ? given.email.trim() : '';
  if (!email) wants.push('your email');
  else if (!credentials.shape.email.safeParse(email).success) wants.push('a valid email address');
  const password = typeof given.password === 'string' ? given.password : '';
  if (!password) wants.push('a password of at least 10 characters');
  else if (password.length < 10) wants.push('a longer password, at least 10 characters');
  else if (password.length > 256) wants.push('a shorter password, at most 256 characters');
  return wants.length ? `To create your account, give ${wants.join(' and ')}.` : 'To create your account, fix the fields marked below.';
}

export async function signup({ ctx, input, device }: { ctx: Ctx; input: unknown; device?: Device }) {
  let values: z.output<typeof signupInput>;
  try {
    values = parseInput(signupInput, input, INCOMPLETE);
  } catch (err) {
    if (!(err instanceof ToolportError)) throw err;
    // Every bad field at once: a taken email is told together with the password's problems, not after them.
    const email = credentials.shape.email.safeParse(input && typeof input === 'object' ? (input as { email?: unknown }).email : undefined);
    if (email.success && (await emailTaken(ctx.svc, email.data))) {
      throw validation('Fix the fields marked below.', [takenField, ...(err.details.errors ?? []).filter((e) => e.path !== '/email')]);
    }
    throw validation(signupSentence(input), err.details.errors ?? []);
  }
  const { email, password } = values;
  const passwordHash = await hashPassword(password, ctx.svc.config.passwordCost);
  const [row] = await ctx.svc.db
    .insert(users)
    .values({ id: newId('usr'), email, passwordHash, userKey: newUserKey() })
    .onConflictDoNothing({ target: users.email })
    .returning();
  if (!row) throw conflict(TAKEN, { errors: [takenField] });
  const session = await createSession(ctx.svc, row.id, device);
  sendVerification(ctx.svc, row);
  return { user: toPublic(ctx.svc, row), session, deviceCookie: deviceCookieFor(ctx.svc, email) };
}

/** Issued and mailed behind the answer; a failure is logged, and the person can ask again from Home. */
function sendVerification(svc: Services, user: { id: string; email: string }) {
  void issueLink(svc, user, 'verify')
    .then((link) => sendInBackground(svc, { to: user.email, ...mailTexts.verify(link) }))
    .catch((err: unknown) => svc.log.error('cannot issue a verification link', { err }));
}

/**
 * docs/security.md "Email links". Per address and per typed email (whether or not an account has
 * it, so the count tells nothing), and the same answer either way.
 */
const RESET_LIMITS = { perAddress: 10, perEmail: 3, windowMs: 60 * 60_000 };
const VERIFY_RESENDS_PER_HOUR = 3;

const resetRequest = inputObject({ email: credentials.shape.email });
/** `POST /api/session/reset-request`. */
export type ResetRequest = z.input<typeof resetRequest>;

export async function requestPasswordReset({ ctx, input, clientAddress }: { ctx: Ctx; input: unknown; clientAddress?: string }) {
  const { email } = parseInput(resetRequest, input, 'Give the email of your account.');
  const svc = ctx.svc;
  const { over, retryAfterMs } = await svc.limiter.hit([
    { key: `reset:address:${clientAddress || 'unknown'}`, limit: RESET_LIMITS.perAddress, windowMs: RESET_LIMITS.windowMs },
    { key: `reset:email:${email}`, limit: RESET_LIMITS.perEmail, windowMs: RESET_LIMITS.windowMs },
  ]);
  if (over >= 0) {
    const seconds = Math.ceil(retryAfterMs / 1000);
    throw limitExceeded(`Too many reset links were asked for ${over === 0 ? 'from your network' : 'this email'}. Try again in ${minutes(seconds)}, or use the newest link already sent.`, seconds);
  }
  const [row] = await svc.db.select({ id: users.id, email: users.email }).from(users).where(eq(users.email, email));
  if (row) {
    void issueLink(svc, row, 'reset')
      .then((link) => sendInBackground(svc, { to: row.email, ...mailTexts.reset(link) }))
      .catch((err: unknown) => svc.log.error('cannot issue a reset link', { err }));
  }
  return { message: `If an account uses ${email}, a link to reset its password is on its way there. It works once, for 30 minutes.` };
}

const resetInput = inputObject({ token: z.string({ message: 'The link is incomplete: open it from the mail again.' }), password: newPassword });
/** `POST /api/session/reset`. */
export type ResetInput = z.input<typeof resetInput>;

/**
 * A new password from a reset link: every session of the account ends (this one starts), every
 * other link is void, and the per-address sign-in counts of its email start over.
 */
export async function resetPassword({ ctx, input, device }: { ctx: Ctx; input: unknown; device?: Device }) {
  const { token, password } = parseInput(resetInput, input, 'The new password is not valid.');
  const svc = ctx.svc;
  // The link first: a made-up token costs no password hash.
  const link = await useLink(svc, token, 'reset');
  const passwordHash = await hashPassword(password, svc.config.passwordCost);
  const now = svc.clock.now();
  const [row] = await svc.db
    .update(users)
    .set({ passwordHash, emailVerifiedAt: sql`coalesce(${users.emailVerifiedAt}, ${now.toISOString()}::timestamptz)` })
    .where(and(eq(users.id, link.userId), eq(users.email, link.email)))
    .returning();
  if (!row) throw new ToolportError('GONE', 'This link was sent to an email the account no longer uses. Ask for a new reset link.');
  await svc.db.delete(sessions).where(eq(sessions.userId, row.id));
  await voidLinks(svc, row.id);
  await svc.db.execute(sql`delete from login_throttle where key like ${pairKeysOf(row.email)}`);
  sendInBackground(svc, { to: row.email, ...mailTexts.passwordChanged() });
  const session = await createSession(svc, row.id, device);
  return { user: toPublic(svc, row), session, deviceCookie: deviceCookieFor(svc, row.email) };
}

const passwordChange = inputObject({
  current: z.string({ message: 'Give your current password.' }),
  password: newPassword,
});
/** `POST /api/me/password`. */
export type PasswordChange = z.input<typeof passwordChange>;

/**
 * The signed-in person's row once `password` is theirs. Every step that asks for the current
 * password shares one count (5 per 15 minutes), so a stolen session cannot become a way to guess it.
 */
export async function withCurrentPassword(
  svc: Services,
  userId: string,
  password: string,
  say: { tooMany: (wait: string) => string; wrong: ToolportError },
) {
  const { over, retryAfterMs } = await svc.limiter.hit([{ key: `password-change:${userId}`, limit: 5, windowMs: 15 * 60_000 }]);
  const seconds = Math.ceil(retryAfterMs / 1000);
  if (over >= 0) throw limitExceeded(say.tooMany(minutes(seconds)), seconds);
  const [row] = await svc.db.select().from(users).where(eq(users.id, userId));
  if (!row) throw unauthorized();
  if (!(await verifyPassword(password, row.passwordHash))) throw say.wrong;
  return row;
}

export const wrongPassword = () => validation('Your password is not right.', [{ path: '/password', message: 'This is not your password.' }]);

/** A new password, given the current one: every other session ends, and a notice is mailed. */
export async function changePassword({ ctx, input, token }: { ctx: Ctx; input: unknown; token: string }) {
  const { current, password } = parseInput(passwordChange, input, 'The new password is not valid.');
  const svc = ctx.svc;
  const userId = personId(ctx);
  const row = await withCurrentPassword(svc, userId, current, {
    tooMany: (wait) => `Too many attempts to change the password. Try again in ${wait}.`,
    wrong: validation('Your current password is not right.', [{ path: '/current', message: 'This is not your current password.' }]),
  });
  const passwordHash = await hashPassword(password, svc.config.passwordCost);
  await svc.db.update(users).set({ passwordHash }).where(and(eq(users.id, userId), eq(users.passwordHash, row.passwordHash)));
  const ended = await endOtherSessions(svc, userId, token);
  await voidLinks(svc, userId);
  sendInBackground(svc, { to: row.email, ...mailTexts.passwordChanged() });
  return { endedSessions: ended };
}

/** `POST /api/sessions/end-others`. */
export async function signOutOthers({ ctx, token }: { ctx: Ctx; token: string }) {
  return { endedSessions: await endOtherSessions(ctx.svc, personId(ctx), token) };
}

const verifyInput = inputObject({ token: z.string({ message: 'The link is incomplete: open it from the mail again.' }) });
/** `POST /api/session/verify-email`. */
export type VerifyEmailInput = z.input<typeof verifyInput>;

/** Works signed in or not (the mail may be opened on another device): the link is the proof. */
export async function verifyEmail({ ctx, input }: { ctx: Ctx; input: unknown }) {
  const { token } = parseInput(verifyInput, input, 'The link is incomplete: open it from the mail again.');
  const link = await useLink(ctx.svc, token, 'verify');
  const [row] = await ctx.svc.db
    .update(users)
    .set({ emailVerifiedAt: sql`coalesce(${users.emailVerifiedAt}, ${ctx.svc.clock.now().toISOString()}::timestamptz)` })
    .where(and(eq(users.id, link.userId), eq(users.email, link.email)))
    .returning({ email: users.email });
  if (!row) throw new ToolportError('GONE', 'This link was sent to an email the account no longer uses.');
  return { email: row.email };
}

/** `POST /api/me/verification`: a new verification link to the person's email. */
export async function resendVerification({ ctx }: { ctx: Ctx }) {
  const userId = personId(ctx);
  const [row] = await ctx.svc.db.select().from(users).where(eq(users.id, userId));
  if (!row) throw unauthorized();
  if (row.emailVerifiedAt) throw conflict('Your email is confirmed already.');
  const { over, retryAfterMs } = await ctx.svc.limiter.hit([{ key: `verify:${userId}`, limit: VERIFY_RESENDS_PER_HOUR, windowMs: 60 * 60_000 }]);
  if (over >= 0) throw limitExceeded(`Three links were sent in the last hour. Use the newest, or try again in ${minutes(Math.ceil(retryAfterMs / 1000))}.`, Math.ceil(retryAfterMs / 1000));
  const link = await issueLink(ctx.svc, row, 'verify');
  sendInBackground(ctx.svc, { to: row.email, ...mailTexts.verify(link) });
  return { message: `A new link is on its way to ${row.email}.` };
}

/**
 * docs/security.md "Sign-in". A browser that signed in to the account before (its device cookie)
 * has its own allowance and nothing else counts against it. Any other attempt counts per account
 * and address, per address, and in one allowance per account shared by every unknown browser, so
 * many addresses get no more guesses than one account's allowance, and the owner's known browser,
 * a passkey or a reset link still gets in. Places are taken before the password is checked, so a
 * parallel burst gets no more checks than the allowance.
 */
const SIGNIN_LIMITS = {
  /** Wrong passwords for one account from one address in a window; the next attempts are refused. */
  perAccountAndAddress: 5,
  /** Wrong passwords from one address across all accounts in a window. */
  perAddress: 20,
  /** Wrong passwords for one account from every browser it has not seen, together, in a window. */
  perAccountUnknownDevices: 10,
  /** Wrong passwords from one known browser for its account in a window. */
  perKnownDevice: 5,
  windowMs: 15 * 60 * 1000,
  /** How long a count that reached its limit refuses, from the attempt that reached it. */
  lockMs: 15 * 60 * 1000,
};

interface Reservation {
  key: string;
  limit: number;
  /** This attempt's place in the count (1 = the first of the window). */
  place: number;
  /** The window this place belongs to, as Postgres wrote it (text keeps its exact value). */
  windowStart: string;
}

export async function login({
  ctx,
  input,
  clientAddress,
  userAgent,
  deviceCookie,
}: {
  ctx: Ctx;
  input: unknown;
  clientAddress?: string;
  userAgent?: string;
  /** The browser's device cookie (devices.ts), if it has one. */
  deviceCookie?: string;
}) {
  const { email, password } = parseInput(credentials, input, INCOMPLETE);
  const svc = ctx.svc;
  const address = clientAddress || 'unknown';
  const device = knownDevice(svc, email, deviceCookie);
  const places: Reservation[] = [];
  const take = async (key: string, limit: number, sentence: (wait: string) => string) => {
    const got = await reserve(svc, key, limit);
    if ('retryAfterSeconds' in got) {
      await Promise.all(places.map((p) => giveBack(svc, p)));
      throw limitExceeded(sentence(minutes(got.retryAfterSeconds)), got.retryAfterSeconds);
    }
    places.push(got);
    return got;
  };
  let first: Reservation;
  if (device) {
    first = await take(`device:${device}`, SIGNIN_LIMITS.perKnownDevice, (wait) => `Too many failed sign-ins to this account from this browser. Try again in ${wait}, or reset your password.`);
  } else {
    first = await take(`pair:${email}|${address}`, SIGNIN_LIMITS.perAccountAndAddress, (wait) => `Too many failed sign-ins to this account from your network. Try again in ${wait}.`);
    if (clientAddress) await take(`ip:${clientAddress}`, SIGNIN_LIMITS.perAddress, (wait) => `Too many failed sign-ins from your network. Try again in ${wait}.`);
    await take(
      `unknown:${email}`,
      SIGNIN_LIMITS.perAccountUnknownDevices,
      (wait) => `Too many failed sign-ins to this account from browsers it has not seen before. Sign in from a browser you have used with Toolport before, reset your password, or try again in ${wait}.`,
    );
  }
  // Only attempts holding a place in every count get here. An unknown email is checked against a
  // dummy hash and stays counted like a wrong password: the same answer, the same time.
  const [row] = await svc.db.select().from(users).where(eq(users.email, email));
  const ok = await verifyPassword(password, row?.passwordHash ?? (await dummyPasswordHash(svc.config.passwordCost)));
  if (!row || !ok) throw unauthorized('The email or password is wrong.');
  // The right password: the first count (this browser's, or this address's for the account) starts
  // over, and the others get their place back, so successful sign-ins never spend an allowance.
  await Promise.all([resetPair(svc, first), ...places.slice(1).map((p) => giveBack(svc, p))]);
  const session = await createSession(svc, row.id, { userAgent, address: clientAddress });
  // A browser that never signed in to this account: the owner hears of it, whoever it was.
  if (!device) sendInBackground(svc, { to: row.email, ...mailTexts.newBrowser(browserOf(userAgent ?? null), networkOf(clientAddress ?? null)) });
  return { user: toPublic(svc, row), session, deviceCookie: deviceCookieFor(svc, email, device) };
}

/** The LIKE pattern of an account's per-address sign-in counts (`pair:<email>|<address>`), its email's wildcards escaped. */
export const pairKeysOf = (email: string) => `pair:${email.replace(/[\\%_]/g, (c) => `\\${c}`)}|%`;

const minutes = (seconds: number) => {
  const m = Math.max(1, Math.ceil(seconds / 60));
  return m === 1 ? '1 minute' : `${m} minutes`;
};

/** One statement: the upsert's row lock orders concurrent attempts, and its `where` refuses past the limit. */
async function reserve(svc: Services, key: string, limit: number): Promise<Reservation | { retryAfterSeconds: number }> {
  for (let tries = 0; ; tries++) {
    const now = svc.clock.now();
    const at = now.toISOString();
    const old = new Date(now.getTime() - SIGNIN_LIMITS.windowMs).toISOString();
    const lockUntil = new Date(now.getTime() + SIGNIN_LIMITS.lockMs).toISOString();
    const taken = executedRows<{ failures: number; window_start: string }>(
      await svc.db.execute(sql`
        insert into login_throttle as t (key, failures, window_start, locked_until)
        values (${key}, 1, ${at}::timestamptz, null)
        on conflict (key) do update set
          failures = case when t.window_start <= ${old}::timestamptz then 1 else t.failures + 1 end,
          window_start = case when t.window_start <= ${old}::timestamptz then ${at}::timestamptz else t.window_start end,
          locked_until = case when t.window_start > ${old}::timestamptz and t.failures + 1 >= ${limit}::int
            then ${lockUntil}::timestamptz else null end
        where (t.locked_until is null or t.locked_until <= ${at}::timestamptz)
          and (t.window_start <= ${old}::timestamptz or t.failures < ${limit}::int)
        returning failures, window_start::text as window_start`),
    );
    if (taken[0]) return { key, limit, place: Number(taken[0].failures), windowStart: taken[0].window_start };
    const [held] = await svc.db.select().from(loginThrottle).where(eq(loginThrottle.key, key));
    const until = Math.max(
      held?.lockedUntil?.getTime() ?? 0,
      held && held.failures >= limit ? held.windowStart.getTime() + SIGNIN_LIMITS.windowMs : 0,
    );
    const retryAfterSeconds = Math.ceil((until - now.getTime()) / 1000);
    // A success or a give-back freed a place between the two statements: try once more.
    if (retryAfterSeconds > 0 || tries > 0) return { retryAfterSeconds: Math.max(1, retryAfterSeconds) };
  }
}

/** Hands this attempt's place back (a success on the address count, or a refusal by the other key). */
async function giveBack(svc: Services, r: Reservation) {
  await svc.db.execute(sql`
    update login_throttle set
      failures = failures - 1,
      locked_until = case when failures - 1 >= ${r.limit}::int then locked_until else null end
    where key = ${r.key} and window_start = ${r.windowStart}::timestamptz and failures > 0`);
}

/** If a burst took places meanwhile, only this place is given back, so the burst stays counted. */
async function resetPair(svc: Services, r: Reservation) {
  const gone = executedRows<{ key: string }>(
    await svc.db.execute(sql`
      delete from login_throttle
      where key = ${r.key} and window_start = ${r.windowStart}::timestamptz and failures = ${r.place}::int
      returning key`),
  );
  if (!gone.length) await giveBack(svc, r);
}

/** `GET /api/me`. */
export interface Me extends PublicUser {
  operator: boolean;
  /** Whether the person opened a link mailed to `email`. */
  emailVerified: boolean;
}

export async function getMe({ ctx }: { ctx: Ctx }): Promise<Me> {
  const [row] = await ctx.svc.db.select().from(users).where(eq(users.id, personId(ctx)));
  if (!row) throw unauthorized();
  // By account id, never by email (which sign-up does not prove).
  return { ...toPublic(ctx.svc, row), operator: ctx.svc.config.operators.includes(row.id), emailVerified: row.emailVerifiedAt !== null };
}

/** `GET /api/session`: who is signed in on this browser, if anyone. */
export interface SessionState {
  person: Me | null;
}

/**
 * Whether the browser's cookie is a session, and whose: answered either way, so a signed-out
 * dashboard loads without a failed request (`GET /api/me` answers 401 then).
 */
export async function getSessionState({ ctx }: { ctx: Ctx }): Promise<SessionState> {
  if (ctx.actor.kind !== 'person') return { person: null };
  try {
    return { person: await getMe({ ctx }) };
  } catch (err) {
    if (err instanceof ToolportError && err.code === 'UNAUTHORIZED') return { person: null };
    throw err;
  }
}

export async function getSettings({ ctx }: { ctx: Ctx }) {
  const [row] = await ctx.svc.db.select({ aiApps: users.aiApps, displayName: users.displayName }).from(users).where(eq(users.id, personId(ctx)));
  if (!row) throw unauthorized();
  return { aiApps: row.aiApps, displayName: row.displayName };
}

const settingsInput = inputObject({
  aiApps: z.boolean({ message: 'Use true or false.' }).optional(),
  displayName: publisherName('Give a name of 1 to 60 characters, or null to have none.').nullable().optional(),
}).strict('This setting does not exist.');
/** `PATCH /api/settings`. */
export type AccountSettingsInput = z.input<typeof settingsInput>;
/** `GET` and `PATCH /api/settings`. */
export type AccountSettings = Awaited<ReturnType<typeof getSettings>>;

export async function updateSettings({ ctx, input }: { ctx: Ctx; input: unknown }) {
  const { aiApps, displayName } = parseInput(settingsInput, input, 'The settings are not valid.');
  const userId = personId(ctx);
  if (displayName !== undefined) {
    // An operator checked the name when they listed the person's add-on: it is not swapped alone.
    const [named] = await ctx.svc.db.select({ displayName: users.displayName }).from(users).where(eq(users.id, userId));
    if (named && named.displayName !== displayName && (await hasListedAddon(ctx.svc, userId))) {
      throw conflict('Your publisher name was checked by a Toolport operator when they listed your add-on; ask an operator to change it.');
    }
    await ctx.svc.db.update(users).set({ displayName }).where(eq(users.id, userId));
  }
  if (aiApps !== undefined) {
    await ctx.svc.db.update(users).set({ aiApps }).where(eq(users.id, userId));
    await ctx.svc.changes.changed('gate', { userId });
  }
  return getSettings({ ctx });
}

/** A new MCP URL; the old one stops answering at once. */
export async function rotateUserKey({ ctx }: { ctx: Ctx }): Promise<PublicUser> {
  const userId = personId(ctx);
  const [row] = await ctx.svc.db.update(users).set({ userKey: newUserKey() }).where(eq(users.id, userId)).returning();
  if (!row) throw new ToolportError('NOT_FOUND', 'That account does not exist.');
  await ctx.svc.changes.changed('gate', { userId });
  return toPublic(ctx.svc, row);
}
