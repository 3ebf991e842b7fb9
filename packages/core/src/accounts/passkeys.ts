import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type AuthenticatorTransportFuture,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { and, asc, eq, gt, lt, sql } from 'drizzle-orm';
import { z } from 'zod';
import type { Ctx } from '../context';
import { personId } from '../context';
import { conflict, limitExceeded, notFound, ToolportError, unauthorized } from '../errors';
import { countedNetwork } from '../limits';
import { inputObject, parseInput } from '../input';
import type { Services } from '../services';
import { passkeyChallenges, passkeys, users } from '../db/schema/index';
import { toPublic, withCurrentPassword, wrongPassword } from './accounts';
import { deviceCookieFor } from './devices';
import { sendInBackground } from './email-links';
import { createSession, type Device } from './sessions';

/**
 * Passkeys (docs/security.md "Passkeys"). The relying party is PUBLIC_URL's host, and only its
 * origin is accepted: a passkey made for Toolport answers no other site, and no other site's for it.
 */
const CHALLENGE_TTL_MS = 5 * 60_000;
const MAX_PASSKEYS = 10;
/** Sign-in challenges are asked for before anyone is known: bounded per network so they cannot pile up. */
const SIGNIN_OPTIONS_PER_ADDRESS = { limit: 30, windowMs: 15 * 60_000 };

const relyingParty = (svc: Services) => ({ rpID: new URL(svc.config.publicUrl).hostname, origin: svc.config.publicOrigin });

/**
 * Stores a challenge to be used once; expired ones of anyone go at the same time. An account has one
 * registration challenge at a time, so at most one passkey is being added to it at once.
 */
async function keepChallenge(svc: Services, challenge: string, purpose: 'register' | 'signin', userId: string | null) {
  const now = svc.clock.now();
  await svc.db.delete(passkeyChallenges).where(lt(passkeyChallenges.expiresAt, now));
  if (userId) await svc.db.delete(passkeyChallenges).where(and(eq(passkeyChallenges.userId, userId), eq(passkeyChallenges.purpose, purpose)));
  await svc.db.insert(passkeyChallenges).values({ challenge, purpose, userId, expiresAt: new Date(now.getTime() + CHALLENGE_TTL_MS) });
}

/** Takes the challenge the authenticator signed, once: a replayed or late answer finds nothing. */
const takeChallenge = (svc: Services, purpose: 'register' | 'signin', userId: string | null) => async (challenge: string) => {
  const taken = await svc.db
    .delete(passkeyChallenges)
    .where(
      and(
        eq(passkeyChallenges.challenge, challenge),
        eq(passkeyChallenges.purpose, purpose),
        userId ? eq(passkeyChallenges.userId, userId) : sql`${passkeyChallenges.userId} is null`,
        gt(passkeyChallenges.expiresAt, svc.clock.now()),
      ),
    )
    .returning({ challenge: passkeyChallenges.challenge });
  return taken.length === 1;
};

/** `GET /api/me/passkeys` (each). */
export interface PasskeyView {
  id: string;
  name: string;
  synced: boolean;
  createdAt: string;
  lastUsedAt: string | null;
}

const toView = (row: typeof passkeys.$inferSelect): PasskeyView => ({
  id: row.id,
  name: row.name,
  synced: row.backedUp,
  createdAt: row.createdAt.toISOString(),
  lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
});

export async function listPasskeys({ ctx }: { ctx: Ctx }): Promise<PasskeyView[]> {
  const rows = await ctx.svc.db.select().from(passkeys).where(eq(passkeys.userId, personId(ctx))).orderBy(asc(passkeys.createdAt));
  return rows.map(toView);
}

const optionsInput = inputObject({ password: z.string({ message: 'Give your password.' }) });
/** `POST /api/me/passkeys/options`. */
export type PasskeyOptionsInput = z.input<typeof optionsInput>;

const tooMany = () => conflict(`You have ${MAX_PASSKEYS} passkeys, the most an account may have. Remove one you no longer use first.`);

/**
 * `POST /api/me/passkeys/options`: what the browser's `navigator.credentials.create` needs. The
 * password first: a passkey signs in for good, so a stolen session alone must not be able to add one.
 */
export async function passkeyRegistrationOptions({ ctx, input }: { ctx: Ctx; input: unknown }) {
  const { password } = parseInput(optionsInput, input, 'Give your password to add a passkey.');
  const svc = ctx.svc;
  const userId = personId(ctx);
  const user = await withCurrentPassword(svc, userId, password, { tooMany: () => 'Too many wrong passwords. Try again in a few minutes.', wrong: wrongPassword() });
  const own = await svc.db.select({ id: passkeys.id, transports: passkeys.transports }).from(passkeys).where(eq(passkeys.userId, userId));
  if (own.length >= MAX_PASSKEYS) throw tooMany();
  const { rpID } = relyingParty(svc);
  const options = await generateRegistrationOptions({
    rpName: 'Toolport',
    rpID,
    userName: user.email,
    userID: new TextEncoder().encode(userId),
    attestationType: 'none',
    // The same authenticator twice is refused by the browser itself.
    excludeCredentials: own.map((p) => ({ id: p.id, transports: p.transports as AuthenticatorTransportFuture[] })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
  });
  await keepChallenge(svc, options.challenge, 'register', userId);
  return options;
}

const NAME = 'Give the passkey a name of 1 to 60 characters, such as the device it is on.';
/** Browsers send more fields than these; the library reads what it needs and checks each. */
const credentialResponse = z.object({ id: z.string().min(1).max(1024), rawId: z.string().max(1024), type: z.literal('public-key'), response: z.record(z.unknown()) }).passthrough();
const addInput = inputObject({
  name: z.string({ message: NAME }).trim().min(1, NAME).max(60, NAME),
  response: credentialResponse,
});
/** `POST /api/me/passkeys`. */
export type AddPasskeyInput = z.input<typeof addInput>;

const NOT_ACCEPTED = 'Toolport could not accept this passkey. Try adding it again.';

/** Verifies what the authenticator made against the challenge this account was given, and keeps its public key. */
export async function addPasskey({ ctx, input }: { ctx: Ctx; input: unknown }): Promise<PasskeyView> {
  const { name, response } = parseInput(addInput, input, 'The passkey is not valid.');
  const svc = ctx.svc;
  const userId = personId(ctx);
  const { rpID, origin } = relyingParty(svc);
  let verified: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
  try {
    verified = await verifyRegistrationResponse({
      response: response as unknown as RegistrationResponseJSON,
      expectedChallenge: takeChallenge(svc, 'register', userId),
      expectedOrigin: origin,
      expectedRPID: rpID,
      requireUserVerification: true,
    });
  } catch (err) {
    svc.log.info('passkey registration refused', { err: (err as Error).message });
    throw validationOf(err);
  }
  if (!verified.verified) throw new ToolportError('VALIDATION', NOT_ACCEPTED);
  const { credential, credentialBackedUp } = verified.registrationInfo;
  // Checked again: passkeys may have been added since the challenge (one at a time, keepChallenge).
  const [held] = await svc.db.select({ count: sql<number>`count(*)::int` }).from(passkeys).where(eq(passkeys.userId, userId));
  if ((held?.count ?? 0) >= MAX_PASSKEYS) throw tooMany();
  const [row] = await svc.db
    .insert(passkeys)
    .values({
      id: credential.id,
      userId,
      publicKey: Buffer.from(credential.publicKey).toString('base64url'),
      counter: credential.counter,
      transports: credential.transports ?? [],
      name,
      backedUp: credentialBackedUp,
    })
    .onConflictDoNothing({ target: passkeys.id })
    .returning();
  if (!row) throw conflict('This passkey is registered with Toolport already.');
  const [user] = await svc.db.select({ email: users.email }).from(users).where(eq(users.id, userId));
  if (user) sendInBackground(svc, { to: user.email, ...passkeyAddedMail(name) });
  return toView(row);
}

/**
 * Which of the library's checks refused, read from the start of its message only: the rest quotes
 * what the client sent, which must not pick the sentence.
 */
const refusedBy = (err: unknown) => {
  const message = (err as Error).message ?? '';
  if (/^(Custom challenge verifier|Unexpected (registration|authentication) response challenge)/.test(message)) return 'challenge';
  if (/^(Unexpected (registration|authentication) response origin|Unexpected RP ID)/.test(message)) return 'origin';
  if (/^Response counter value/.test(message)) return 'counter';
  return 'other';
};

/** The library's refusals name the check that failed; the person is told what to do. */
function validationOf(err: unknown) {
  const by = refusedBy(err);
  if (by === 'challenge') return new ToolportError('VALIDATION', 'This passkey prompt has expired or was used already. Try again.');
  if (by === 'origin') return new ToolportError('VALIDATION', 'This passkey was made on another site, not on Toolport. Add it from your Home page here.');
  return new ToolportError('VALIDATION', NOT_ACCEPTED);
}

const passkeyAddedMail = (name: string) => ({
  subject: 'A passkey was added to your Toolport account',
  text: `A passkey named "${name}" was just added to your Toolport account; it signs in without your password. If it was not you, remove it on your Home page and change your password at once.\n`,
});

export async function removePasskey({ ctx, id }: { ctx: Ctx; id: string }) {
  const gone = await ctx.svc.db.delete(passkeys).where(and(eq(passkeys.id, id), eq(passkeys.userId, personId(ctx)))).returning({ id: passkeys.id });
  if (!gone.length) throw notFound('That passkey');
}

/** `POST /api/session/passkey/options`: a challenge for any passkey (the browser offers the person's). */
export async function passkeySignInOptions({ ctx, clientAddress }: { ctx: Ctx; clientAddress?: string }) {
  const svc = ctx.svc;
  const { over, retryAfterMs } = await svc.limiter.hit([{ key: `passkey-options:${countedNetwork(clientAddress || 'unknown')}`, ...SIGNIN_OPTIONS_PER_ADDRESS }]);
  if (over >= 0) throw limitExceeded('Too many passkey prompts from your network. Try again in a few minutes.', Math.ceil(retryAfterMs / 1000));
  const options = await generateAuthenticationOptions({ rpID: relyingParty(svc).rpID, userVerification: 'required' });
  await keepChallenge(svc, options.challenge, 'signin', null);
  return options;
}

const signInInput = inputObject({ response: credentialResponse });
/** `POST /api/session/passkey`. */
export type PasskeySignInInput = z.input<typeof signInInput>;

/**
 * Signs in with a passkey: no password, so no sign-in allowance is spent or checked (docs/security.md
 * "Sign-in"); the signature over a one-time challenge is the proof.
 */
export async function signInWithPasskey({ ctx, input, device }: { ctx: Ctx; input: unknown; device?: Device }) {
  const { response } = parseInput(signInInput, input, 'The passkey answer is not valid.');
  const svc = ctx.svc;
  const [row] = await svc.db.select().from(passkeys).where(eq(passkeys.id, response.id));
  if (!row) throw unauthorized('This passkey is not registered with Toolport (it may have been removed). Sign in with your password.');
  // The account the authenticator names must be the passkey's (WebAuthn §7.2), when it names one.
  const handle = (response.response as { userHandle?: unknown }).userHandle;
  if (typeof handle === 'string' && handle && Buffer.from(handle, 'base64url').toString('utf8') !== row.userId) {
    throw unauthorized('Toolport could not verify this passkey. Try again, or sign in with your password.');
  }
  const { rpID, origin } = relyingParty(svc);
  let verified: Awaited<ReturnType<typeof verifyAuthenticationResponse>>;
  try {
    verified = await verifyAuthenticationResponse({
      response: response as unknown as AuthenticationResponseJSON,
      expectedChallenge: takeChallenge(svc, 'signin', null),
      expectedOrigin: origin,
      expectedRPID: rpID,
      credential: { id: row.id, publicKey: Buffer.from(row.publicKey, 'base64url'), counter: row.counter, transports: row.transports as AuthenticatorTransportFuture[] },
      requireUserVerification: true,
    });
  } catch (err) {
    const by = refusedBy(err);
    svc.log.warn('passkey sign-in refused', { err: (err as Error).message, passkey: row.id });
    if (by === 'counter') {
      throw unauthorized('This passkey’s signature count went backwards, which a copied authenticator does. Sign in with your password, and remove the passkey on your Home page if you did not copy it.');
    }
    if (by === 'origin') throw unauthorized('This passkey answer was made for another site, not for Toolport.');
    throw unauthorized(by === 'challenge' ? 'This passkey prompt has expired or was used already. Try again.' : 'Toolport could not verify this passkey. Try again, or sign in with your password.');
  }
  if (!verified.verified) throw unauthorized('Toolport could not verify this passkey. Try again, or sign in with your password.');
  // Conditional on the counter read: of two answers racing with one counter, one signs in.
  const moved = await svc.db
    .update(passkeys)
    .set({ counter: verified.authenticationInfo.newCounter, lastUsedAt: svc.clock.now() })
    .where(and(eq(passkeys.id, row.id), eq(passkeys.counter, row.counter)))
    .returning({ id: passkeys.id });
  // None moved: removed meanwhile, or another answer with this counter signed in first.
  if (!moved.length) throw unauthorized('This passkey was just removed or used by another sign-in. Try again.');
  const [user] = await svc.db.select().from(users).where(eq(users.id, row.userId));
  if (!user) throw unauthorized();
  const session = await createSession(svc, user.id, device);
  return { user: toPublic(svc, user), session, deviceCookie: deviceCookieFor(svc, user.email) };
}
