// oidc-provider 9 ships no types; the test helper (oauth-provider.ts) uses a small part of it.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';
  export class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    on(event: string, listener: (...args: any[]) => void): this;
    proxy: boolean;
    [key: string]: any;
  }
  export default Provider;
}
