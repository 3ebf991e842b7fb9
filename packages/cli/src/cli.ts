import { readFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import pkg from '../package.json' with { type: 'json' };
import { Api } from './api';
import { configPath, DEFAULT_URL, readConfig, removeConfig, resolveCredentials, writeConfig } from './config';
import { outcomeWord, runDev } from './dev';
import { ownInstallLines } from './own-install';
import type { OwnInstall } from '@toolport/core/api';
import type { Jwks } from '@toolport/core/audit-chain';
import { CliError, EXIT, usage, type ExitCode, type FieldProblem } from './errors';

export { CliError, EXIT } from './errors';
export type { ExitCode } from './errors';

/** Everything the CLI touches outside itself, so it can run in-process as well as from main.ts. */
export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** The whole of stdin (for `login` without --key). */
  readStdin: () => Promise<string>;
  stdinIsTTY?: boolean;
  cwd?: string;
  fetch?: typeof fetch;
}

const HELP = `toolport: the Toolport developer CLI

Usage:
  toolport login [--url URL] [--key tpk_...]     store the API key (read from stdin when --key is absent)
  toolport logout                                forget the stored API key (it stays valid: revoke it in the dashboard)
  toolport addon lint <addon.json>               check a manifest locally: errors (with JSON paths) and warnings
  toolport addon push <addon.json> [--webhook URL]
                                                 register the add-on, or publish a new version if it exists
  toolport addon check <id> <script.json>        run a check script through Toolport and print the report
  toolport addon deliveries <id> [--limit N]     the newest deliveries to the add-on's webhook (default 20)
  toolport addon rotate-secret <id>              a new signing secret; the old one keeps signing for 24 h
  toolport dev <addon.json> [--webhook URL]      push the add-on when it changed, push again on each save,
                                                 move your own install along with each release, and stream
                                                 its deliveries and your refused calls live; Ctrl-C stops
  toolport audit verify <file.ndjson> [--jwks FILE|URL]
                                                 check a downloaded audit trail: every event's hash and each
                                                 chain's order; says where it breaks (no login needed). With
                                                 --jwks (the deployment's /oauth/jwks), also the signature of
                                                 each checkpoint retention left

Options:
  --json     machine-readable output on stdout (also for errors)
  --help     this help
  --version  the CLI's version

Environment: TOOLPORT_URL and TOOLPORT_API_KEY override the stored login; TOOLPORT_CONFIG names the
config file (default ~/.config/toolport/config.json, mode 0600).
Exit codes: 0 ok, 1 refused or invalid, 2 usage, 3 authentication, 4 network or server unavailable.`;

interface Out {
  json: boolean;
  io: CliIo;
  /** Human lines (stdout), suppressed in --json mode. */
  say(line?: string): void;
  /** The --json result. */
  result(value: unknown): void;
}

type Command = (args: string[], out: Out) => Promise<void>;

function parse<O extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: O, positionals: string[]) {
  let parsed;
  try {
    parsed = parseArgs({ args, options: { json: { type: 'boolean' }, ...options }, allowPositionals: true, strict: true });
  } catch (err) {
    throw usage((err as Error).message.split('\n')[0]!);
  }
  if (parsed.positionals.length !== positionals.length) {
    throw usage(`Expected ${positionals.length ? positionals.map((p) => `<${p}>`).join(' ') : 'no arguments'}${parsed.positionals.length > positionals.length ? `, got extra "${parsed.positionals[positionals.length]}"` : ''}.`);
  }
  return parsed as { values: { [K in keyof O]?: O[K]['type'] extends 'boolean' ? boolean : string }; positionals: string[] };
}

/** A path the person typed, against the folder they typed it in. */
const fullPath = (file: string, io: CliIo) => path.resolve(io.cwd ?? process.cwd(), file);

const READ_ERRORS: Record<string, string> = {
  ENOENT: 'there is no such file',
  EISDIR: 'it is a folder, not a file',
  EACCES: 'permission denied',
};

function readTextFile(full: string, what: string): string {
  try {
    return readFileSync(full, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw usage(`Cannot read ${what} ${full}: ${(code && READ_ERRORS[code]) ?? code ?? (err as Error).message}.`);
  }
}

function parseJsonText(text: string, full: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CliError(`${full} is not valid JSON: ${(err as Error).message}`, EXIT.refused);
  }
}

function readJsonFile(file: string, io: CliIo, what: string): unknown {
  const full = fullPath(file, io);
  return parseJsonText(readTextFile(full, what), full);
}

/** The variable an add-on's secret goes in by convention: `notes` → NOTES_SECRET, `my-tools` → MY_TOOLS_SECRET. */
export const secretVariable = (addonId: string) => `${addonId.toUpperCase().replace(/-/g, '_')}_SECRET`;

function api(io: CliIo): Api {
  const creds = resolveCredentials(io.env);
  if (!creds.key) throw new CliError('Not logged in: run `toolport login`, or set TOOLPORT_API_KEY.', EXIT.auth);
  return new Api(creds.url, creds.key, io.fetch);
}

const problemLines = (kind: string, list: FieldProblem[] = []) => list.map((p) => `${kind} ${p.path || '/'}: ${p.message}`);

function idArg(id: string): string {
  if (!/^[a-z][a-z0-9-]{1,29}$/.test(id)) throw usage(`"${id}" is not an add-on id (lowercase letters, digits and hyphens).`);
  return id;
}

const login: Command = async (args, out) => {
  const { values } = parse(args, { url: { type: 'string' }, key: { type: 'string' } }, []);
  const { io } = out;
  const file = configPath(io.env);
  const url = (values.url || io.env.TOOLPORT_URL || readConfig(file).url || DEFAULT_URL).replace(/\/+$/, '');
  let parsedUrl: URL;
  try {
    parsedUrl = new URL(url);
  } catch {
    throw usage(`--url must be an absolute URL such as ${DEFAULT_URL}.`);
  }
  if (parsedUrl.protocol !== 'https:' && parsedUrl.protocol !== 'http:') throw usage('--url must be http(s).');
  let key = values.key;
  if (!key) {
    if (io.stdinIsTTY) io.stderr('Paste an API key (dashboard → Developers → API keys) and press Enter: ');
    key = (await io.readStdin()).split(/\r?\n/).map((l) => l.trim()).find(Boolean) ?? '';
  }
  key = key.trim();
  if (!/^tpk_[A-Za-z0-9_-]+$/.test(key)) throw new CliError('That is not an API key: keys look like tpk_...', EXIT.refused);
  // Only a key Toolport accepts is stored.
  await new Api(url, key, io.fetch).request('GET', '/api/addons');
  writeConfig(file, { url, key });
  out.say(`Logged in to ${url}. Saved to ${file}.`);
  out.result({ url, configPath: file });
};

/**
 * Forgets the stored login: the config file goes. The key itself stays valid (it may be in use
 * elsewhere, in CI say); revoking it is the dashboard's job, and the message says so.
 */
const logout: Command = async (args, out) => {
  parse(args, {}, []);
  const file = configPath(out.io.env);
  const removed = removeConfig(file);
  out.result({ configPath: file, removed });
  out.say(removed ? `Logged out: removed ${file}. The key still works until you revoke it in the dashboard.` : `Not logged in here (no ${file}).`);
  if (out.io.env.TOOLPORT_API_KEY) out.say('TOOLPORT_API_KEY is set in this environment and still applies.');
};

/** Lint advice for a manifest that was refused, as far as its shape allows. */
async function bestEffortLint(manifest: unknown): Promise<FieldProblem[]> {
  if (!manifest || typeof manifest !== 'object' || Array.isArray(manifest)) return [];
  const m = manifest as Record<string, unknown>;
  const tools = Array.isArray(m.tools) ? m.tools : [];
  if (!tools.every((t) => t && typeof t === 'object' && typeof t.name === 'string' && typeof t.summary === 'string')) return [];
  try {
    const { lintManifest } = await import('@toolport/core/lint');
    return lintManifest({ description: '-', webhook: '', ...m, tools } as never);
  } catch {
    return [];
  }
}

const plural = (k: number, word: string) => `${k} ${word}${k === 1 ? '' : 's'}`;

/** A manifest checked here by the server's own rules (the `lint` command, and `dev` on each save). */
export interface LintReport {
  errors: FieldProblem[];
  warnings: FieldProblem[];
  toolCount: number;
}

async function lintReport(manifest: unknown): Promise<LintReport> {
  const { checkManifest } = await import('@toolport/core/manifest');
  try {
    const checked = checkManifest(manifest);
    return { errors: [], warnings: checked.warnings, toolCount: checked.tools.length };
  } catch (err) {
    const e = err as { code?: string; details?: { errors?: FieldProblem[] } };
    if (e.code !== 'VALIDATION') throw err;
    return { errors: e.details?.errors ?? [{ path: '', message: (err as Error).message }], warnings: await bestEffortLint(manifest), toolCount: 0 };
  }
}

/** The report's lines, then its one-sentence verdict. */
function lintLines(file: string, r: LintReport): { lines: string[]; verdict: string } {
  const counts = `${plural(r.errors.length, 'error')}, ${plural(r.warnings.length, 'warning')}`;
  return {
    lines: [...problemLines('error', r.errors), ...problemLines('warning', r.warnings)],
    verdict: r.errors.length ? `${file}: ${counts}.` : `${file}: valid (${plural(r.toolCount, 'tool')}), ${plural(r.warnings.length, 'warning')}.`,
  };
}

const lint: Command = async (args, out) => {
  const { positionals } = parse(args, {}, ['addon.json']);
  const manifest = readJsonFile(positionals[0]!, out.io, 'the manifest');
  const report = await lintReport(manifest);
  const file = fullPath(positionals[0]!, out.io);
  out.result({ ok: report.errors.length === 0, file, errors: report.errors, warnings: report.warnings });
  const { lines, verdict } = lintLines(file, report);
  for (const line of lines) out.say(line);
  // The --json result above already says it; a person reads the sentence on stderr.
  if (report.errors.length) throw new CliError(verdict, EXIT.refused, { printed: true });
  out.say(verdict);
};

/**
 * What a push did: the add-on registered (its secret, shown this once) or a new version published,
 * with what became of the developer's own install (null: no `toolport dev` runs, so it stays where
 * they accepted; absent: a Toolport older than dev sessions).
 */
export type Pushed =
  | { action: 'created'; id: string; signingSecret: string; warnings: FieldProblem[] }
  | { action: 'updated'; id: string; version?: number; warnings: FieldProblem[]; ownInstall?: OwnInstall | null };

/** The manifest as pushed: `--webhook` replaces its URL. */
function pushBody(manifest: unknown, webhook?: string): Record<string, unknown> {
  if (!manifest || typeof manifest !== 'object' || Array.isArray(manifest)) throw new CliError('The manifest must be a JSON object.', EXIT.refused);
  return { ...(manifest as Record<string, unknown>), ...(webhook ? { webhook } : {}) };
}

/** The digest Toolport gives the current release (`dev` pushes only a manifest that differs). */
async function pushedDigest(manifest: unknown, webhook?: string): Promise<string> {
  const { checkManifest, manifestDigest } = await import('@toolport/core/manifest');
  return manifestDigest(checkManifest(pushBody(manifest, webhook)).manifest);
}

/** Registers the add-on, or publishes a new version when it is the developer's already (`push`, `dev`). */
async function pushManifest(client: Api, manifest: unknown, webhook?: string): Promise<Pushed> {
  const body = pushBody(manifest, webhook);
  const id = typeof body.id === 'string' ? body.id : undefined;

  const created = await client.request('POST', '/api/addons', body, { accept: [409] });
  if (created.status !== 409) {
    return { action: 'created', id: String(created.body?.id ?? id), signingSecret: created.body?.signingSecret, warnings: created.body?.warnings ?? [] };
  }
  if (!id) throw new CliError(created.body?.detail ?? 'Toolport refused the manifest.', EXIT.refused, { status: 409 });
  let updated;
  try {
    updated = await client.request('PUT', `/api/addons/${encodeURIComponent(id)}`, body);
  } catch (err) {
    // Someone else's add-on looks like no add-on: the POST's sentence says the id is taken.
    if (err instanceof CliError && err.extra.status === 404) {
      throw new CliError(created.body?.detail ?? `The add-on id "${id}" is taken.`, EXIT.refused, { status: 409 });
    }
    throw err;
  }
  const ownInstall: OwnInstall | null | undefined = updated.body?.ownInstall;
  return { action: 'updated', id, version: updated.body?.version, warnings: updated.body?.warnings ?? [], ...(ownInstall !== undefined ? { ownInstall } : {}) };
}

function pushedLines(p: Pushed): string[] {
  const lines =
    p.action === 'created'
      ? [
          `Created add-on ${p.id}.`,
          `Signing secret (shown once; give it to your add-on, e.g. as ${secretVariable(p.id)}):`,
          `  ${p.signingSecret}`,
        ]
      : [`Updated add-on ${p.id}${p.version ? ` to version ${p.version}` : ''}.`];
  return [...lines, ...problemLines('warning', p.warnings)];
}

const push: Command = async (args, out) => {
  const { values, positionals } = parse(args, { webhook: { type: 'string' } }, ['addon.json']);
  const manifest = readJsonFile(positionals[0]!, out.io, 'the manifest');
  const client = api(out.io);
  const pushed = await pushManifest(client, manifest, values.webhook);
  out.result(pushed);
  for (const line of pushedLines(pushed)) out.say(line);
  // A `toolport dev` running elsewhere moved the developer's own install along.
  if (pushed.action === 'updated' && pushed.ownInstall) {
    for (const line of ownInstallLines(pushed.ownInstall, { baseUrl: client.baseUrl, id: pushed.id, version: pushed.version })) out.say(line);
  }
};

const dev: Command = async (args, out) => {
  const { values, positionals } = parse(args, { webhook: { type: 'string' } }, ['addon.json']);
  const file = fullPath(positionals[0]!, out.io);
  const client = api(out.io);
  await runDev({
    file,
    json: out.json,
    stdout: out.io.stdout,
    client,
    read: () => readTextFile(file, 'the manifest'),
    check: async (text) => {
      const manifest = parseJsonText(text, file);
      const report = await lintReport(manifest);
      return { manifest, report, ...lintLines(file, report) };
    },
    push: (manifest) => pushManifest(client, manifest, values.webhook),
    digest: (manifest) => pushedDigest(manifest, values.webhook),
    pushedLines,
    problemLines,
  });
};

function preview(result: any): string {
  if (result && typeof result === 'object' && Array.isArray(result.content)) {
    const textOf = result.content.map((b: any) => (b?.type === 'text' ? String(b.text) : `[${b?.type}]`)).join(' ');
    return textOf.replace(/\s+/g, ' ').slice(0, 200);
  }
  return JSON.stringify(result)?.slice(0, 200) ?? '';
}

const check: Command = async (args, out) => {
  const { positionals } = parse(args, {}, ['id', 'script.json']);
  const id = idArg(positionals[0]!);
  const script = readJsonFile(positionals[1]!, out.io, 'the check script');
  if (!Array.isArray(script)) throw new CliError('A check script is a JSON list of steps: [{"tool": ..., "arguments": {...}}, {"wait": 1}, ...].', EXIT.refused);
  // Steps can wait for approvals (30 s each) and for `wait`; give the whole run time.
  const seconds = script.reduce((s: number, step: any) => s + (typeof step?.wait === 'number' ? step.wait : 0) + (step?.approve ? 31 : 31), 30);
  const res = await api(out.io).request('POST', `/api/addons/${id}/check`, script, { timeoutMs: Math.min(seconds, 900) * 1000 });
  out.result(res.body);
  const steps: any[] = Array.isArray(res.body?.tools) ? res.body.tools : [];
  for (const s of steps) {
    if (typeof s?.refused === 'string') out.say(`✗ ${s.tool}: refused: ${s.refused}`);
    else if (s?.result?.isError) out.say(`✗ ${s.tool}: error: ${preview(s.result)}`);
    else out.say(`✓ ${s?.tool}: ${preview(s?.result)}`);
  }
  out.say(`${steps.length} tool call${steps.length === 1 ? '' : 's'} checked.`);
};

const deliveries: Command = async (args, out) => {
  const { values, positionals } = parse(args, { limit: { type: 'string' } }, ['id']);
  const id = idArg(positionals[0]!);
  const limit = values.limit === undefined ? 20 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw usage('--limit must be a whole number from 1 to 1000.');
  const client = api(out.io);
  const items: any[] = [];
  let cursor: string | null | undefined;
  do {
    const q = new URLSearchParams({ limit: String(limit) });
    if (cursor) q.set('cursor', cursor);
    const res = await client.request('GET', `/api/addons/${id}/deliveries?${q}`);
    const page = Array.isArray(res.body) ? res.body : res.body?.deliveries ?? res.body?.items ?? [];
    items.push(...page);
    cursor = Array.isArray(res.body) ? null : res.body?.nextCursor;
    if (!page.length) break;
  } while (cursor && items.length < limit);
  const shown = items.slice(0, limit);
  out.result({ deliveries: shown });
  if (!shown.length) out.say(`No deliveries to ${id} yet.`);
  for (const d of shown) {
    const when = typeof d.createdAt === 'string' ? d.createdAt.replace('T', ' ').slice(0, 19) : String(d.createdAt ?? '');
    const outcome = [typeof d.status === 'number' ? `HTTP ${d.status}` : 'no answer', outcomeWord(d)].join(' ');
    const latency = typeof d.latencyMs === 'number' ? `${d.latencyMs} ms` : '';
    // `subject` is the person's pseudonym for this add-on, as the webhook saw it in `user.id`.
    const user = d.subject ? `user ${d.subject}` : '';
    out.say([when, d.type ?? '', d.callId ?? '', d.attempt !== undefined ? `attempt ${d.attempt}` : '', outcome, latency, user].filter(Boolean).join('  '));
    if (d.detail) out.say(`    ${String(d.detail).slice(0, 300)}`);
  }
};

const rotateSecret: Command = async (args, out) => {
  const { positionals } = parse(args, {}, ['id']);
  const id = idArg(positionals[0]!);
  const res = await api(out.io).request('POST', `/api/addons/${id}/secret`);
  out.result({ id, signingSecret: res.body?.signingSecret });
  out.say(`New signing secret for ${id} (shown once):`);
  out.say(`  ${res.body?.signingSecret}`);
  out.say('The previous secret keeps signing alongside it for 24 h: configure both (new first), then drop the old one.');
};

/**
 * Reads the export a line at a time (an operator's can hold millions of events): what is kept is
 * each chain's last event, not the file.
 */
const auditVerify: Command = async (args, out) => {
  const { positionals, values } = parse(args, { jwks: { type: 'string' } }, ['file.ndjson']);
  const full = fullPath(positionals[0]!, out.io);
  const jwks = values.jwks === undefined ? undefined : await readJwks(values.jwks, out.io);
  const { AuditVerifier } = await import('@toolport/core/audit-chain');
  const verifier = new AuditVerifier({ jwks });
  let file;
  try {
    file = await open(full);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw usage(`Cannot read the audit export ${full}: ${(code && READ_ERRORS[code]) ?? code ?? (err as Error).message}.`);
  }
  try {
    let n = 0;
    for await (const line of file.readLines({ encoding: 'utf8' })) verifier.line(line, ++n);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw usage(`Cannot read the audit export ${full}: ${(code && READ_ERRORS[code]) ?? code ?? (err as Error).message}.`);
  } finally {
    await file.close().catch(() => {});
  }
  const v = verifier.verdict();
  out.result(v);
  const counts = `${plural(v.events, 'event')} in ${plural(v.chains, 'chain')}`;
  if (!v.ok) {
    for (const p of v.problems) out.say(p);
    throw new CliError(`${full} does not verify: ${plural(v.problems.length, 'problem')} among ${counts}.`, EXIT.refused, { printed: true });
  }
  out.say(`verified ${counts}`);
  const starts = Object.entries(v.checkpoints);
  if (!starts.length) return;
  const [chain, first] = starts[0]!;
  const which = starts.length === 1 ? `chain ${chain} starts at a checkpoint (its events up to seq ${first.seq} were removed by retention)` : `${starts.length} chains start at a checkpoint (their earlier events were removed by retention)`;
  const its = starts.length === 1 ? 'its signature' : 'their signatures';
  out.say(v.signaturesChecked ? `${which}; ${its} verified with the JWKS given` : `${which}; ${its} not checked: give --jwks with the deployment's JWKS (its /oauth/jwks) to check ${starts.length === 1 ? 'it' : 'them'}`);
};

/** `--jwks`: a file, or an http(s) URL (the authorization server's jwks_uri). */
async function readJwks(where: string, io: CliIo): Promise<Jwks> {
  let body: unknown;
  if (/^https?:\/\//i.test(where)) {
    let res: Response;
    try {
      res = await (io.fetch ?? fetch)(where, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(30_000) });
    } catch (err) {
      const e = err as Error & { cause?: { code?: string } };
      throw new CliError(`Could not read the JWKS at ${where}: ${e.name === 'TimeoutError' ? 'it did not answer in time' : e.cause?.code ?? e.message}.`, EXIT.network);
    }
    if (!res.ok) throw new CliError(`Could not read the JWKS at ${where}: HTTP ${res.status}.`, EXIT.network);
    body = parseJsonText(await res.text(), where);
  } else {
    body = readJsonFile(where, io, 'the JWKS');
  }
  const keys = (body as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || !keys.every((k) => k && typeof k === 'object')) throw usage(`${where} is not a JWKS: a JSON object with a "keys" list, as the deployment's /oauth/jwks serves.`);
  return { keys } as Jwks;
}

const commands: Record<string, Command> = {
  login,
  logout,
  'addon lint': lint,
  'addon push': push,
  'addon check': check,
  'addon deliveries': deliveries,
  'addon rotate-secret': rotateSecret,
  dev,
  'audit verify': auditVerify,
};

/** Runs one CLI invocation and returns its exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<ExitCode> {
  const json = argv.includes('--json');
  const out: Out = {
    json,
    io,
    say: (line = '') => {
      if (!json) io.stdout(`${line}\n`);
    },
    result: (value) => {
      if (json) io.stdout(`${JSON.stringify(value, null, 2)}\n`);
    },
  };
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
    io.stdout(`${pkg.version}\n`);
    return EXIT.ok;
  }
  const words = argv.filter((a) => !a.startsWith('-'));
  if (!words.length || argv.includes('--help') || argv.includes('-h') || words[0] === 'help') {
    io.stdout(`${HELP}\n`);
    return words.length || argv.includes('--help') || argv.includes('-h') ? EXIT.ok : EXIT.usage;
  }
  const name = words[0] === 'addon' || words[0] === 'audit' ? `${words[0]} ${words[1] ?? ''}` : words[0]!;
  const command = commands[name];
  try {
    if (!command) throw usage(`Unknown command "${name.trim()}". Run \`toolport --help\`.`);
    // Drop the command words (first occurrences) and keep everything else for parseArgs.
    const rest = [...argv];
    for (const w of name.split(' ')) rest.splice(rest.indexOf(w), 1);
    await command(rest, out);
    return EXIT.ok;
  } catch (err) {
    if (!(err instanceof CliError)) {
      io.stderr(`toolport: unexpected failure (a bug in the CLI; please report it): ${(err as Error)?.stack ?? String(err)}\n`);
      return EXIT.refused;
    }
    if (json) {
      if (err.message && !err.extra.printed) io.stdout(`${JSON.stringify({ error: { message: err.message, exitCode: err.exitCode, ...err.extra } }, null, 2)}\n`);
    } else if (err.message) {
      io.stderr(`toolport: ${err.message}\n`);
      for (const line of problemLines('error', err.extra.errors)) io.stderr(`  ${line}\n`);
      if (err.exitCode === EXIT.usage) io.stderr('Run `toolport --help` for usage.\n');
    }
    return err.exitCode;
  }
}
