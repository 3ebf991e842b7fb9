import type { ServerResponse } from 'node:http';
import type { Context } from 'hono';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Actor, Services } from '@toolport/core';

export type AppEnv = {
  Variables: {
    svc: Services;
    actor: Actor;
    requestId: string;
    /** What a stopping server waits for (server.ts): a detached held call counts until it ends. */
    inFlight: { count: number };
    /** Set when the request is authenticated by a dashboard session cookie. */
    sessionToken?: string;
  };
};

/** Node's response for this request, when served by @hono/node-server (absent under `app.request()`). */
export const nodeResponse = (c: Context<AppEnv>): ServerResponse | undefined => (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;

/** @hono/node-server then writes nothing; the edge counts the request in flight until Node's response closes. */
export const PARKED: Response = RESPONSE_ALREADY_SENT;
export const isParked = (res: Response) => res.headers.has('x-hono-already-sent');
