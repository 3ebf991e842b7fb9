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
    let res: Response;
    const url = new URL(path, `${this.baseUrl}/`);
    try {
      res = await this.fetchImpl(url, {
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
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; message?: string } };
      const why = e.name === 'TimeoutError' ? 'it did not answer in time' : e.cause?.code ?? e.cause?.message ?? e.message;
      throw new CliError(`Could not reach Toolport at ${this.baseUrl}: ${why}.`, EXIT.network);
    }
    const text = await res.text();
    let parsed: any;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if ((res.status >= 200 && res.status < 300) || opts.accept?.includes(res.status)) return { status: res.status, body: parsed };
    throw errorFrom(res.status, parsed, this.baseUrl);
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
