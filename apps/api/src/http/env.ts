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
