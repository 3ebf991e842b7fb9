import { randomBytes } from 'node:crypto';
import type { BusTransport, EventBus } from './bus';
import { ADDONS_CHANNEL, GATES_CHANNEL, RULES_CHANNEL, TOOLS_CHANNEL } from './channels';

/** So that a verb never imports the caches or streams that read what it wrote. */
export interface Changes {
  /** A person's installs, tool switches, settings or accepted releases. */
  tools: { userId: string };
  /** An add-on changed for everyone: a release, its listing, its webhook disabled. */
  addon: { addonId: string };
  /** A person's gates: AI apps, MCP URL, an app revoked, an app's tools. No userId: everyone's. */
  gate: { userId?: string; grantId?: string };
  /** A person's approval rules. No userId: everyone's. */
  rules: { userId?: string };
}

export type ChangeKind = keyof Changes;
export const CHANGE_KINDS = ['tools', 'addon', 'gate', 'rules'] as const satisfies readonly ChangeKind[];

/** The bus channel each kind travels on between processes (unchanged names: processes of two releases agree). */
const CHANNEL = { tools: TOOLS_CHANNEL, addon: ADDONS_CHANNEL, gate: GATES_CHANNEL, rules: RULES_CHANNEL } as const;

type Handler<K extends ChangeKind> = (change: Changes[K]) => void;

/**
 * Heard here before the verb answers, so the person's next request sees them; its own bus messages
 * carry this feed's origin and are skipped.
 */
export class ChangeFeed {
  private readonly origin = randomBytes(8).toString('base64url');
  private readonly local = new Map<ChangeKind, Set<Handler<never>>>();

  constructor(private readonly bus: EventBus) {}

  async changed<K extends ChangeKind>(kind: K, change: Changes[K]): Promise<void> {
    for (const handler of this.local.get(kind) ?? []) (handler as Handler<K>)(change);
    // TypeScript cannot correlate CHANNEL[kind] with Changes[kind]; BusMessages types them alike.
    await (this.bus as unknown as BusTransport).publish(CHANNEL[kind], { ...change, origin: this.origin });
  }

  /** Hears `kind` from here and from every process; resolves once live, with its end. */
  async follow<K extends ChangeKind>(kind: K, handler: Handler<K>): Promise<() => Promise<void>> {
    let set = this.local.get(kind);
    if (!set) this.local.set(kind, (set = new Set()));
    set.add(handler as Handler<never>);
    try {
      const off = await this.bus.subscribe(CHANNEL[kind], (message) => {
        if ((message as { origin?: unknown } | null)?.origin !== this.origin) handler((message ?? {}) as Changes[K]);
      });
      return async () => {
        set.delete(handler as Handler<never>);
        await off();
      };
    } catch (err) {
      set.delete(handler as Handler<never>);
      throw err;
    }
  }
}
