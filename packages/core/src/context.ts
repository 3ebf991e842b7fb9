import { ToolportError } from './errors';
import type { Services } from './services';

/** Who is acting. Every verb filters by `userId`: the tenant is the person. */
export type Actor =
  | { kind: 'person'; userId: string }
  | { kind: 'developer'; userId: string; keyId: string }
  | { kind: 'app'; userId: string; grantId: string; clientId: string; appName: string }
  | { kind: 'system' };

export interface Ctx {
  svc: Services;
  actor: Actor;
}

export function personId(ctx: Ctx): string {
  if (ctx.actor.kind === 'system') throw new Error('This verb needs a person, not the system.');
  return ctx.actor.userId;
}

/** Operators are named by account id, which no sign-up can choose (config.ts, TOOLPORT_OPERATORS). Answers the operator's id. */
export function requireOperator(ctx: Ctx, refusal: string): string {
  const id = personId(ctx);
  if (!ctx.svc.config.operators.includes(id)) throw new ToolportError('FORBIDDEN', refusal);
  return id;
}
