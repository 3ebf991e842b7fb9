import type { ServerResponse } from 'node:http';
import type { Context } from 'hono';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Actor, Services } from '@toolport/core';

export type AppEnv = {
  Variables: {
    svc: Services;
    actor: Actor;
    requestId: string;
    /** Set when the request is authenticated by a dashboard session cookie. */
    sessionToken?: string;
  };
};

/** Node's response for this request, when served by @hono/node-server (absent under `app.request()`). */
export const nodeResponse = (c: Context<AppEnv>): ServerResponse | undefined => (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;

/**
 * What a handler returns on Node when it will answer later, straight on Node's response (a call
 * held for approval, routes/mcp/node-writers.ts): @hono/node-server then writes nothing, and the edge counts the
 * request as in flight (its log line, its metric, a stopping server) until that response closes.
 */
export const PARKED: Response = RESPONSE_ALREADY_SENT;
export const isParked = (res: Response) => res.headers.has('x-hono-already-sent');
