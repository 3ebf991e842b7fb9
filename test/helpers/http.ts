import { confirmEmail } from './mail-files';
/** A small HTTP client for tests: JSON in and out, and a cookie jar like a browser's. */
export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export class Client {
  cookies = new Map<string, string>();
  constructor(readonly baseUrl: string, public bearer?: string) {}

  async request<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply<T>> {
    const h: Record<string, string> = { ...headers };
    if (body !== undefined && !h['content-type']) h['content-type'] = 'application/json';
    if (this.bearer && !h.authorization) h.authorization = `Bearer ${this.bearer}`;
    if (this.cookies.size && !h.cookie) h.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(new URL(path, this.baseUrl), {
      method,
      headers: h,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      redirect: 'manual',
    }).catch((err: Error & { cause?: { code?: string; message?: string } }) => {
      // undici says only "fetch failed"; the cause (ECONNRESET, ECONNREFUSED...) is what explains it.
      throw new Error(`${method} ${path}: ${err.message} (${err.cause?.code ?? err.cause?.message ?? 'no cause'})`, { cause: err });
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const [k, ...v] = pair!.split('=');
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(line)) this.cookies.delete(k!.trim());
      else this.cookies.set(k!.trim(), v.join('='));
    }
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  }
  get<T = any>(path: string, headers?: Record<string, string>) { return this.request<T>('GET', path, undefined, headers); }
  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>) { return this.request<T>('POST', path, body ?? {}, headers); }
  put<T = any>(path: string, body?: unknown, headers?: Record<string, string>) { return this.request<T>('PUT', path, body ?? {}, headers); }
  patch<T = any>(path: string, body?: unknown, headers?: Record<string, string>) { return this.request<T>('PATCH', path, body ?? {}, headers); }
  delete<T = any>(path: string, headers?: Record<string, string>) { return this.request<T>('DELETE', path, undefined, headers); }
}

let counter = 0;
/** Signs a new person up and returns their client (cookie set) and profile. */
export async function newPerson(baseUrl: string, label = 'person') {
  const client = new Client(baseUrl);
  const email = `${label}-${process.pid}-${Date.now()}-${counter++}@example.com`;
  const res = await client.post('/api/session/signup', { email, password: 'correct horse battery' });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${res.text}`);
  return { client, email, password: 'correct horse battery', user: res.body.user as { id: string; email: string; mcpUrl: string } };
}

/** The sign-in of the deployment's operator, whose account every test database holds (OPERATOR_ID, db-template.ts). */
export const OPERATOR_EMAIL = 'operator@toolport.test';
export const OPERATOR_PASSWORD = 'operator password here';
const operators = new Map<string, Promise<Client>>();
/** The deployment's operator (TOOLPORT_OPERATORS names its id, target.ts), signed in once per server. */
export function operatorOf(baseUrl: string): Promise<Client> {
  let op = operators.get(baseUrl);
  if (!op) {
    op = (async () => {
      const client = new Client(baseUrl);
      const res = await client.post('/api/session/login', { email: OPERATOR_EMAIL, password: OPERATOR_PASSWORD });
      if (res.status !== 200) throw new Error(`operator sign-in failed: ${res.status} ${res.text}`);
      return client;
    })();
    op.catch(() => operators.delete(baseUrl));
    operators.set(baseUrl, op);
  }
  return op;
}

const confirmed = new Set<string>();
/**
 * An operator approves the public listing `developer` asked for, so other people can install it.
 * Only a confirmed email publishes, so the developer first opens the link Toolport mailed them.
 */
export async function listPublicly(baseUrl: string, addonId: string, developer: { client: Client; email: string }) {
  if (!confirmed.has(developer.email)) {
    await confirmEmail(developer);
    confirmed.add(developer.email);
  }
  // The operator names the publisher (the catalog shows it): the developer's own name if they gave one.
  const approve = async () => {
    const op = await operatorOf(baseUrl);
    const queue = await op.get('/api/operator/listings');
    const named = queue.status === 200 ? (queue.body as Array<{ addonId: string; publisher: { name: string | null } }>).find((l) => l.addonId === addonId)?.publisher.name : undefined;
    return op.post(`/api/operator/listings/${encodeURIComponent(addonId)}/decision`, { decision: 'approve', publisher: named ?? 'Test Developer' });
  };
  let res = await approve();
  if (res.status === 401) {
    // Another server once answered on this URL: sign the operator in here.
    operators.delete(baseUrl);
    res = await approve();
  }
  if (res.status !== 200) throw new Error(`approving the listing of ${addonId} failed: ${res.status} ${res.text}`);
}

/** The person turns AI apps on, installs the add-on and switches `tools` on (the three gates). */
export async function installFor(person: { client: Client }, addonId: string, tools: Record<string, boolean>) {
  for (const [method, path, body] of [
    ['PATCH', '/api/settings', { aiApps: true }],
    ['POST', '/api/installs', { addon: addonId }],
    ['PATCH', `/api/installs/${addonId}`, { tools }],
  ] as const) {
    const res = await person.client.request(method, path, body);
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
  }
}
