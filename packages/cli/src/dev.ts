// `toolport dev`: push the manifest (unless the current release is that manifest), push again on each
// save, keep a dev session open so the developer's own install follows each release, and stream the
// add-on's deliveries, and the developer's calls Toolport refused, live. Node built-ins only (the CLI is published as one file); cli.ts gives it the manifest rules
// and the push, so lint and push behave exactly as `addon lint` and `addon push` do.
import { existsSync, watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import type { DevSessionView, LiveDelivery, OwnInstall } from '@toolport/core/api';
import type { Api } from './api';
import type { LintReport, Pushed } from './cli';
import { CliError, EXIT, type FieldProblem } from './errors';
import { ownInstallLines } from './own-install';

export interface DevOptions {
  /** The manifest's full path. */
  file: string;
  json: boolean;
  stdout: (text: string) => void;
  client: Api;
  /** The manifest's text; a CliError when it cannot be read. */
  read(): string;
  /** Parses (a CliError when it is not JSON) and lints a manifest's text. */
  check(text: string): Promise<{ manifest: unknown; report: LintReport; lines: string[]; verdict: string }>;
  push(manifest: unknown): Promise<Pushed>;
  /** The manifest's digest as Toolport computes it for a release (a manifest that lints). */
  digest(manifest: unknown): Promise<string>;
  pushedLines(pushed: Pushed): string[];
  problemLines(kind: string, list?: FieldProblem[]): string[];
}

/** One finished delivery attempt, as `GET /api/addons/{id}/deliveries/live` sends it. */
type Delivery = LiveDelivery;

/** Editors write a file in several steps (truncate and write, or a temporary file and a rename). */
const DEBOUNCE_MS = 150;
/** The server sends a comment every 15 s: three missed and the stream is gone, whatever the socket says. */
const IDLE_MS = 45_000;
const BACKOFF_MS = [1_000, 2_000, 5_000, 10_000, 30_000];
/** Past this an event is not one the server sends; the stream is dropped and opened again. */
const MAX_EVENT_CHARS = 1_000_000;
const ARGUMENTS_SHOWN = 120;
const DETAIL_SHOWN = 300;

const OUTCOMES: Record<string, string> = { result: 'ok', refusal: 'refused', tool_error: 'tool_error', confirm: 'confirm' };

/** What an attempt came to, in a word: a 200 is not always a success. */
export const outcomeWord = (d: { errorClass?: string | null; outcome?: string | null }) =>
  d.errorClass ?? (d.outcome ? (OUTCOMES[d.outcome] ?? d.outcome) : 'answered');

// Control and bidi characters in the add-on's text could move the cursor or reorder the line.
const UNSAFE = /[\p{Cc}\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]/gu;
const printable = (text: string) => text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** At most `max` characters, never half of one, "…" marking the cut. */
function shorten(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

function clock(iso: string): string {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return printable(String(iso));
  return `${at.toTimeString().slice(0, 8)}.${String(at.getMilliseconds()).padStart(3, '0')}`;
}

/** A task's add-on reporting at its answer URL: no arguments, status or attempt to show. */
const LATER: Record<string, string> = { 'tool.progress': 'progress', 'tool.answer': 'answered later' };

function deliveryLine(d: Delivery): string {
  // Toolport answered it itself: what the app sent, why it went no further, and the app's sentence.
  if (d.outcome === 'not_sent') {
    return [
      clock(d.at),
      printable(d.tool),
      shorten(printable(String(d.arguments ?? '')), ARGUMENTS_SHOWN),
      printable(`not sent (${d.errorClass ?? 'refused'})`),
      shorten(printable(String(d.detail ?? '')), DETAIL_SHOWN),
    ].join('  ');
  }
  const later = d.outcome === 'refused' ? 'answer refused' : LATER[d.type];
  if (later) {
    const said = d.type === 'tool.progress' || d.outcome === 'refused' ? String(d.detail ?? '') : outcomeWord(d);
    return [clock(d.at), printable(`${d.tool} (${later})`), shorten(printable(said), DETAIL_SHOWN)].join('  ');
  }
  const parts = [
    clock(d.at),
    printable(d.type === 'tool.confirm' ? `${d.tool} (confirm)` : d.tool),
    shorten(printable(String(d.arguments ?? '')), ARGUMENTS_SHOWN),
    printable(outcomeWord(d)),
    typeof d.status === 'number' ? `HTTP ${d.status}` : 'no answer',
    `${Number(d.latencyMs)} ms`,
    `attempt ${Number(d.attempt)}`,
  ];
  if (d.detail) parts.push(shorten(printable(String(d.detail)), DETAIL_SHOWN));
  return parts.join('  ');
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

function parseBlock(block: string): { event: string; data: string } | undefined {
  let event = 'message';
  const data: string[] = [];
  for (const raw of block.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (!line || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return data.length ? { event, data: data.join('\n') } : undefined;
}

/** Reads an event stream until it ends; resolves with why it ended. */
async function readEvents(res: Response, onDelivery: (d: Delivery) => void): Promise<string> {
  if (!res.body) return 'the server sent no stream';
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let idle: NodeJS.Timeout | undefined;
  let quiet = false;
  const touch = () => {
    clearTimeout(idle);
    idle = setTimeout(() => {
      quiet = true;
      void reader.cancel().catch(() => {});
    }, IDLE_MS);
  };
  let buffer = '';
  try {
    touch();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      touch();
      buffer += value;
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const event = parseBlock(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (event?.event !== 'delivery') continue;
        let d: Delivery;
        try {
          d = JSON.parse(event.data);
        } catch {
          continue;
        }
        if (d && typeof d === 'object' && typeof d.tool === 'string') onDelivery(d);
      }
      if (buffer.length > MAX_EVENT_CHARS) {
        await reader.cancel().catch(() => {});
        return 'the server sent an event too large to read';
      }
    }
    return quiet ? `no heartbeat for ${IDLE_MS / 1000} s` : 'the server ended it';
  } catch (err) {
    return quiet ? `no heartbeat for ${IDLE_MS / 1000} s` : `the connection broke: ${(err as Error).message}`;
  } finally {
    clearTimeout(idle);
  }
}

const sentence = (err: CliError) => err.message.replace(/\.$/, '');

/**
 * Runs until Ctrl-C (then resolves: exit 0) or a failure no save can mend: the key refused, the
 * folder no longer watchable (then rejects with its CliError).
 */
export async function runDev(o: DevOptions): Promise<void> {
  const say = (line = '') => {
    if (!o.json) o.stdout(`${line}\n`);
  };
  const emit = (event: Record<string, unknown>) => {
    if (o.json) o.stdout(`${JSON.stringify(event)}\n`);
  };

  // An unreadable manifest, an unreachable server or a refused key end it here, with their exit codes.
  o.read();
  await o.client.request('GET', '/api/addons');

  let finish!: (err?: unknown) => void;
  const ended = new Promise<void>((resolve, reject) => {
    finish = (err) => (err === undefined ? resolve() : reject(err));
  });
  let stopped = false;

  /** The last text seen (an unchanged save does nothing) and the last manifest pushed. */
  let lastSeen: string | undefined;
  let lastPushed: string | undefined;
  let streamingId: string | undefined;
  let streamStop: AbortController | undefined;
  /** The add-on's dev session: while it lasts, Toolport moves the developer's own install to each release. */
  let session: { addonId: string; id: string; renew: NodeJS.Timeout } | undefined;
  const sessionPath = (addonId: string, id?: string) =>
    `/api/addons/${encodeURIComponent(addonId)}/dev-sessions${id ? `/${encodeURIComponent(id)}` : ''}`;
  const installLines = (own: OwnInstall | null | undefined, id: string, version?: number) =>
    ownInstallLines(own, { baseUrl: o.client.baseUrl, id, version });

  async function closeSession() {
    const s = session;
    if (!s) return;
    session = undefined;
    clearInterval(s.renew);
    // Best effort: a session not ended here lapses on its own within a minute and a half.
    await o.client.request('DELETE', sessionPath(s.addonId, s.id), undefined, { accept: [404], timeoutMs: 5_000 }).catch(() => {});
  }

  /**
   * Opens the add-on's session (ending another add-on's), which brings the developer's own install to
   * the current release and says which release that is. Undefined: not (yet) an add-on of theirs.
   */
  async function openSession(addonId: string): Promise<DevSessionView | undefined> {
    await closeSession();
    let res;
    try {
      res = await o.client.request<DevSessionView>('POST', sessionPath(addonId), {}, { accept: [404] });
    } catch (err) {
      if (!(err instanceof CliError) || err.exitCode === EXIT.auth) throw err;
      say(`Your install will not follow your pushes for now: ${sentence(err)}.`);
      return undefined;
    }
    if (res.status === 404) return undefined;
    if (stopped) {
      await o.client.request('DELETE', sessionPath(addonId, res.body.id), undefined, { accept: [404], timeoutMs: 5_000 }).catch(() => {});
      return undefined;
    }
    const renew = setInterval(() => void renewSession().catch(finish), Math.max(5, Number(res.body.renewAfterSeconds) || 30) * 1000);
    session = { addonId, id: res.body.id, renew };
    return res.body;
  }

  async function renewSession() {
    const s = session;
    if (!s) return;
    try {
      const res = await o.client.request('PUT', sessionPath(s.addonId, s.id), {}, { accept: [404] });
      if (res.status !== 404 || session !== s) return;
    } catch (err) {
      if (err instanceof CliError && err.exitCode === EXIT.auth) throw err;
      // The next renewal tries again; the live stream says when Toolport cannot be reached.
      return;
    }
    // It lapsed (the computer slept, say): a new one brings the install to the current release.
    const view = await openSession(s.addonId);
    if (!view) return;
    say(`Your dev session had lapsed; a new one follows your releases again.`);
    for (const line of installLines(view.ownInstall, s.addonId, view.release.version)) say(line);
  }

  async function streamDeliveries(id: string, signal: AbortSignal) {
    let failures = 0;
    let opened = false;
    while (!signal.aborted) {
      let why: string;
      try {
        const res = await o.client.stream(`/api/addons/${encodeURIComponent(id)}/deliveries/live`, signal);
        failures = 0;
        say(
          opened
            ? `Live stream back: deliveries of ${id} again (any made meanwhile are in \`toolport addon deliveries ${id}\`).`
            : `Streaming deliveries of ${id} live.`,
        );
        emit({ event: 'stream', state: opened ? 'reconnected' : 'open', id });
        opened = true;
        why = await readEvents(res, (d) => {
          say(deliveryLine(d));
          emit({ event: 'delivery', addon: id, ...d });
        });
      } catch (err) {
        if (signal.aborted) return;
        if (!(err instanceof CliError) || err.exitCode === EXIT.auth) throw err;
        if (err.extra.status === 404) {
          say(`The add-on ${id} no longer exists; save the manifest to register it again.`);
          emit({ event: 'stream', state: 'gone', id });
          if (streamingId === id) streamingId = lastSeen = lastPushed = undefined;
          if (session?.addonId === id) void closeSession();
          return;
        }
        why = sentence(err);
      }
      if (signal.aborted) return;
      const wait = BACKOFF_MS[Math.min(failures++, BACKOFF_MS.length - 1)]!;
      say(`Live stream dropped (${why}); reconnecting in ${wait / 1000} s.`);
      emit({ event: 'stream', state: 'dropped', id, reason: why, retryInMs: wait });
      await sleep(wait, signal);
    }
  }

  function follow(id: string) {
    if (streamingId === id) return;
    if (streamingId) say(`The manifest's id is now ${id}: streaming its deliveries instead of ${streamingId}'s.`);
    streamStop?.abort();
    streamingId = id;
    const stop = (streamStop = new AbortController());
    streamDeliveries(id, stop.signal).catch(finish);
  }

  async function onSave(text: string) {
    if (text === lastSeen) return;
    lastSeen = text;
    let checked;
    try {
      checked = await o.check(text);
    } catch (err) {
      if (!(err instanceof CliError)) throw err;
      say(`${err.message} Nothing pushed.`);
      emit({ event: 'lint', file: o.file, ok: false, errors: [{ path: '', message: err.message }], warnings: [] });
      return;
    }
    const { manifest, report, lines, verdict } = checked;
    if (report.errors.length) {
      for (const line of lines) say(line);
      say(`${verdict} Nothing pushed; fix it and save again.`);
      emit({ event: 'lint', file: o.file, ok: false, errors: report.errors, warnings: report.warnings });
      return;
    }
    const canonical = JSON.stringify(manifest);
    if (canonical === lastPushed) {
      say(`${o.file}: saved without changes; nothing pushed.`);
      return;
    }
    // Once per add-on, a session; it says which release is current, so a manifest already published
    // is not published again (a start with no change, a save that undoes the last one).
    const id = String((manifest as { id?: unknown }).id);
    if (session?.addonId !== id) {
      const opened = await openSession(id);
      if (opened && !opened.release.webhookDisabled && opened.release.manifestDigest === (await o.digest(manifest).catch(() => undefined))) {
        lastPushed = canonical;
        say(`${o.file} is version ${opened.release.version} of ${id} already; nothing pushed.`);
        for (const line of installLines(opened.ownInstall, id, opened.release.version)) say(line);
        emit({ event: 'unchanged', id, version: opened.release.version, ownInstall: opened.ownInstall });
        follow(id);
        return;
      }
    }
    let pushed: Pushed;
    try {
      pushed = await o.push(manifest);
    } catch (err) {
      if (!(err instanceof CliError) || err.exitCode === EXIT.auth) throw err;
      // The next save tries again, changed or not (the webhook may have been down, say).
      lastSeen = undefined;
      say(`Not pushed: ${err.message}`);
      for (const line of o.problemLines('error', err.extra.errors)) say(`  ${line}`);
      emit({ event: 'push_failed', message: err.message, errors: err.extra.errors ?? [] });
      return;
    }
    lastPushed = canonical;
    for (const line of o.pushedLines(pushed)) say(line);
    // Every push says what became of the developer's own install (a new add-on's session opens now).
    const own = pushed.action === 'created' ? ((await openSession(pushed.id))?.ownInstall ?? null) : pushed.ownInstall;
    for (const line of installLines(own, pushed.id, pushed.action === 'created' ? 1 : pushed.version)) say(line);
    emit({ event: 'pushed', ...pushed, ownInstall: own ?? null });
    follow(pushed.id);
  }

  // One check at a time; saves during one are looked at once it is done.
  let busy = false;
  let again = false;
  let missing = false;
  async function check() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      do {
        again = false;
        if (!existsSync(o.file)) {
          if (!missing) say(`${o.file} is gone; waiting for it to come back.`);
          missing = true;
          continue;
        }
        missing = false;
        let text: string;
        try {
          text = o.read();
        } catch (err) {
          if (!(err instanceof CliError)) throw err;
          say(err.message);
          lastSeen = undefined;
          continue;
        }
        await onSave(text);
      } while (again && !stopped);
    } catch (err) {
      finish(err);
    } finally {
      busy = false;
    }
  }

  // The folder, not the file: an editor that saves by rename replaces the file being watched.
  const base = path.basename(o.file);
  let debounce: NodeJS.Timeout | undefined;
  let watcher: FSWatcher;
  try {
    watcher = watch(path.dirname(o.file), (_event, name) => {
      if (name && String(name) !== base) return;
      clearTimeout(debounce);
      debounce = setTimeout(() => void check(), DEBOUNCE_MS);
    });
  } catch (err) {
    throw new CliError(`Cannot watch ${path.dirname(o.file)}: ${(err as Error).message}.`, EXIT.refused);
  }
  watcher.on('error', (err) => finish(new CliError(`Stopped watching ${o.file}: ${err.message}.`, EXIT.refused)));
  const onInterrupt = () => finish();
  process.once('SIGINT', onInterrupt);

  say(`Watching ${o.file} (Ctrl-C stops).`);
  emit({ event: 'watching', file: o.file });
  void check();
  try {
    await ended;
  } finally {
    stopped = true;
    process.removeListener('SIGINT', onInterrupt);
    clearTimeout(debounce);
    watcher.close();
    streamStop?.abort();
    // Stopping ends the session: a release pushed from now on leaves the install where it is.
    await closeSession();
  }
  say('Stopped.');
  emit({ event: 'stopped' });
}
