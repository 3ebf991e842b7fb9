import { Hono, type Context } from 'hono';
import { answerLater, MAX_ANSWER_BODY, toolListsChanged, ToolportError, type SignedMessage } from '@toolport/core';
import { limitBody } from '../http/body';
import type { AppEnv } from '../http/env';

/**
 * A task's add-on answers later here (the `answerUrl` its webhook received): signed with its own
 * secret, never a person's session. 204 once taken; problem+json saying why otherwise.
 */
export const answerRoutes = new Hono<AppEnv>()
  .post('/answers/:callId', async (c) => {
    // Unsigned: refused before a body of up to a few MB is read.
    if (!c.req.header('webhook-id') || !c.req.header('webhook-signature')) throw new ToolportError('UNAUTHORIZED', 'An answer is signed: webhook-id, webhook-timestamp and webhook-signature headers, as your deliveries carry.');
    const msg = await signedMessage(c, MAX_ANSWER_BODY, `An answer is at most ${Math.round(MAX_ANSWER_BODY / 1024)} KB, as in a webhook's response.`);
    await answerLater(c.get('svc'), c.req.param('callId'), msg);
    return c.body(null, 204);
  })
  // An add-on with toolsPerPerson says whose tool lists changed (installs/tool-lists.ts), signed likewise.
  .post('/tool-lists/:addonId', async (c) => {
    const msg = await signedMessage(c, 64 * 1024, 'Name at most 1,000 users in one message.');
    return c.json(await toolListsChanged(c.get('svc'), c.req.param('addonId'), msg));
  });

/** The body (at most `max` bytes) and the signature headers an add-on sends, for core to check. */
async function signedMessage(c: Context<AppEnv>, max: number, tooLarge: string): Promise<SignedMessage> {
  await limitBody(c, max, () => new ToolportError('PAYLOAD_TOO_LARGE', tooLarge));
  return {
    id: c.req.header('webhook-id'),
    timestamp: c.req.header('webhook-timestamp'),
    signature: c.req.header('webhook-signature'),
    body: Buffer.from(await c.req.raw.arrayBuffer()),
  };
}
