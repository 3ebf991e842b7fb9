import { CliError, EXIT, type FieldProblem } from './errors';

export interface ApiReply<T = any> {
  status: number;
  body: T;
}

const fieldProblems = (v: unknown): FieldProblem[] | undefined =>
  Array.isArray(v)
    ? v.filter((e) => e && typeof e === 'object').map((e) => ({ path: String(e.path ?? ''), message: String(e.message ?? '') }))
    : undefined;

/** A JSON client for the developer API that turns every failure into a CliError with its exit code. */
export class Api {
  constructor(
    readonly baseUrl: string,
    private readonly key: string,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  /** Sends a request; answers with statuses in `accept` are returned, the rest thrown. */
  async request<T = any>(method: string, path: string, body?: unknown, opts: { accept?: number[]; timeoutMs?: number } = {}): Promise<ApiReply<T>> {
    const res = await this.send(path, {
      method,
      headers: {
        authorization: `Bearer ${this.key}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      redirect: 'manual',
      signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
    });
    const parsed = await readJson(res);
    if ((res.status >= 200 && res.status < 300) || opts.accept?.includes(res.status)) return { status: res.status, body: parsed };
    throw errorFrom(res.status, parsed, this.baseUrl);
  }

  /**
   * Opens an event stream (GET): the response once its headers are in, its body left to read;
   * refusals and failures are thrown as `request` throws them. Ends when `signal` aborts.
   */
  async stream(path: string, signal: AbortSignal, opts: { headersTimeoutMs?: number } = {}): Promise<Response> {
    const opening = new AbortController();
    const timer = setTimeout(() => opening.abort(new DOMException('no answer', 'TimeoutError')), opts.headersTimeoutMs ?? 30_000);
    try {
      const res = await this.send(path, {
        headers: { authorization: `Bearer ${this.key}`, accept: 'text/event-stream' },
        redirect: 'manual',
        signal: AbortSignal.any([signal, opening.signal]),
      });
      if (res.status >= 200 && res.status < 300) return res;
      throw errorFrom(res.status, await readJson(res), this.baseUrl);
    } finally {
      clearTimeout(timer);
    }
  }

  private async send(path: string, init: RequestInit): Promise<Response> {
    try {
      return await this.fetchImpl(new URL(path, `${this.baseUrl}/`), init);
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; message?: string } };
      const why = e.name === 'TimeoutError' ? 'it did not answer in time' : e.cause?.code ?? e.cause?.message ?? e.message;
      throw new CliError(`Could not reach Toolport at ${this.baseUrl}: ${why}.`, EXIT.network);
    }
  }
}

async function readJson(res: Response): Promise<any> {
  const text = await res.text();
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

/** problem+json (`detail`, `errors[]`) to a CliError; 401/403 are authentication, 5xx and gateways network. */
function errorFrom(status: number, body: any, baseUrl: string): CliError {
  const detail = body && typeof body === 'object' && typeof body.detail === 'string' ? body.detail : undefined;
  const errors = body && typeof body === 'object' ? fieldProblems(body.errors) : undefined;
  if (status === 401 || status === 403) {
    return new CliError(`${detail ?? 'The API key was refused.'} (HTTP ${status}; run \`toolport login\` with a valid tpk_ key.)`, EXIT.auth, { status });
  }
  if (status >= 500) {
    return new CliError(`Toolport at ${baseUrl} failed (HTTP ${status})${detail ? `: ${detail}` : '.'}`, EXIT.network, { status });
  }
  if (status >= 300 && status < 400) return new CliError(`Toolport answered with a redirect (HTTP ${status}); check the URL ${baseUrl}.`, EXIT.refused, { status });
  return new CliError(detail ?? `Toolport refused the request (HTTP ${status}).`, EXIT.refused, { status, ...(errors ? { errors } : {}) });
}
