import type { FieldError } from '../errors';
import { isPlainObject, patternWarnings, ptr } from './schema';
import type { Manifest, ManifestTool } from './types';

/** Verbs whose tools change or send something a person would want to approve first. */
const DESTRUCTIVE_VERBS = [
  'delete', 'remove', 'drop', 'erase', 'purge', 'destroy', 'wipe', 'overwrite', 'replace', 'send',
  'post', 'publish', 'unpublish', 'pay', 'transfer', 'cancel', 'revoke', 'archive', 'unsubscribe',
  'kill', 'terminate', 'reset', 'clear', 'truncate', 'charge', 'refund', 'withdraw', 'ban',
  'uninstall', 'deploy', 'submit', 'purchase', 'buy', 'trash', 'expunge', 'unlink', 'shred',
  'notify', 'invite', 'upload', 'merge', 'retweet', 'repost', 'broadcast', 'approve', 'reject', 'decline',
  'unfollow', 'suspend', 'deactivate', 'disable', 'revert', 'rollback', 'execute', 'exec', 'reboot',
  'restart', 'shutdown', 'sell', 'donate', 'unlock', 'mute', 'kick', 'forget',
];
/** Verbs that are nouns as often ("order status"): they count only as the first word. */
const NOUN_VERBS = [
  'email', 'mail', 'message', 'tweet', 'sms', 'dm', 'share', 'book', 'order', 'reserve', 'rent', 'reply',
  'forward', 'comment', 'follow', 'ship', 'invoice', 'bill', 'schedule', 'release', 'push', 'block',
  'lock', 'close', 'tip', 'bid', 'checkout', 'dial',
];
const IRREGULAR: Record<string, string> = { sent: 'send', paid: 'pay', bought: 'buy', withdrew: 'withdraw', withdrawn: 'withdraw', sold: 'sell' };
/** Verbs a tool name starts with when it only reads. */
const READ_VERBS = new Set([
  'get', 'list', 'search', 'find', 'read', 'show', 'fetch', 'lookup', 'look', 'view', 'count', 'query',
  'describe', 'check', 'preview', 'browse', 'inspect', 'peek', 'lists', 'gets', 'finds', 'searches',
  'reads', 'shows', 'fetches', 'looks', 'counts', 'describes', 'checks', 'returns',
]);

/** Every inflection of each verb (deletes, deleted, deleting, dropped, notifies...) → the verb. */
const inflections = (verbs: readonly string[], irregular: Record<string, string> = {}) => {
  const forms = new Map<string, string>(Object.entries(irregular));
  for (const v of verbs) {
    const last = v[v.length - 1]!;
    const stem = last === 'e' ? v.slice(0, -1) : v;
    const ied = /[^aeiou]y$/.test(v) ? [v.slice(0, -1) + 'ies', v.slice(0, -1) + 'ied'] : [];
    for (const f of [v, v + 's', v + 'es', ...ied, stem + 'ed', stem + 'ing', v + last + 'ed', v + last + 'ing', stem + 'ion']) {
      if (!forms.has(f)) forms.set(f, v);
    }
  }
  return forms;
};
const DESTRUCTIVE_FORMS = inflections(DESTRUCTIVE_VERBS, IRREGULAR);
const NOUN_VERB_FORMS = inflections(NOUN_VERBS);

const str = (v: unknown) => (typeof v === 'string' ? v : '');
/** Lowercase words, snake_case, camelCase and letters against digits split: "bulkEmail_2x" → bulk, email, 2, x. */
const words = (s: unknown) =>
  str(s)
    .replace(/(\p{Ll})(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .replace(/(\p{L})(\p{N})|(\p{N})(\p{L})/gu, '$1$3 $2$4')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);

/** The destructive verb a tool's name, title or summary uses, and where. */
function soundsDestructive(tool: ManifestTool): { field: 'name' | 'title' | 'summary'; verb: string } | undefined {
  const fields = [
    ['name', words(tool.name)],
    ['title', words(tool.title).slice(0, 3)],
    ['summary', words(tool.summary).slice(0, 3)],
  ] as const;
  // "order_status" that "Returns the status of an order": the noun, not the verb.
  const summaryReads = READ_VERBS.has(words(tool.summary)[0] ?? '');
  for (const [field, tokens] of fields) {
    // "list_sent_emails", "Lists posts": the leading verb reads, the rest are nouns.
    if (tokens.length && READ_VERBS.has(tokens[0]!)) continue;
    for (const [i, t] of tokens.entries()) {
      // A name or title of one word ("tweet", "Email") is the verb, whatever the summary says.
      const verb = DESTRUCTIVE_FORMS.get(t) ?? (i === 0 && (!summaryReads || tokens.length === 1) ? NOUN_VERB_FORMS.get(t) : undefined);
      if (verb) return { field, verb };
    }
  }
  return undefined;
}

/** Tool text that instructs the model (tool poisoning); matched on lowercased, plain-spaced text. */
const INSTRUCTIONS: ReadonlyArray<{ re: RegExp; says: string; instead: string }> = [
  {
    re: /\b(ignore|disregard|forget|override)\s+((all|any|the|your|these|those|every)\s+)*(previous|prior|earlier|above|preceding|other|system|instructions|rules|guidelines|prompts?)\b|\b(new|updated|real) instructions\b|\bsystem prompt\b|\byou are now\b|<\/?(important|system|instructions?)>/,
    says: 'tells the model to set its instructions aside',
    instead: 'apps and reviewers take this for prompt injection; say what the tool does and what it returns',
  },
  {
    re: /\balways (call|use|run|invoke|choose|prefer|pick) this\b|\b(call|use|run|invoke) this( tool)? (first|before)\b|\bbefore (using|calling|running|invoking) (this|any|every|another|other)\b|\b(instead of|rather than) (any|other|the other|all other) tools?\b|\bmust (always )?be (called|used|run) (first|before)\b/,
    says: 'tells the model when to call the tool',
    instead: 'models choose tools by what they do, so say what it does and what it returns',
  },
  {
    re: /\b(do not|don't|never) (tell|inform|show|alert|notify|let) (the |your )?(user|person|human|customer|owner)\b|\b(do not|don't|never) (mention|reveal|disclose)\b|\bwithout (telling|informing|notifying|alerting|showing) (the |your )?(user|person|human|them)\b|\b(silently|secretly|covertly)\b|\bkeep (this|it) (secret|hidden|private)\b|\bhide (this|it) from\b/,
    says: 'tells the model to keep something from the person',
    instead: 'a tool must never ask a model to hide what it does',
  },
  {
    re: /\bwithout (first )?(asking|confirmation|confirming|approval|permission|consent|prompting)\b|\bwithout (the |their |your )?(user|person)'?s? (approval|permission|consent|confirmation)\b|\b(no need|not necessary|unnecessary) to (ask|confirm|check with)\b|\b(do not|don't|never) (ask|wait) for (permission|confirmation|approval|consent)\b|\b(do not|don't|never) ask the (user|person)\b/,
    says: 'tells the model to act without asking the person',
    instead: 'Toolport asks the person before a destructive call; mark the tool `destructive` instead of telling the model',
  },
  {
    re: /(~|\$home|%userprofile%)[/\\]|(^|[^\p{L}\p{N}])\.(ssh|env|aws|npmrc|netrc|pgpass|git-credentials|kube|docker)\b|\bid_(rsa|dsa|ecdsa|ed25519)\b|\/etc\/(passwd|shadow)\b|\bmcp\.json\b|\bapi[ _-]?keys?\b|\b(private|secret|ssh) keys?\b|\bpasswords?\b|\b(access|auth|bearer|refresh|session) tokens?\b|\bcredentials\b|\b(seed|recovery) phrases?\b|\b(whole|entire|full) conversation\b|\bprevious messages\b/u,
    says: 'mentions secrets, local files or the conversation',
    instead: 'a tool must not ask a model for keys, passwords, files or what the person said (the add-on holds its own credentials); if the tool only manages such things itself, word it so that no model reads it as a request',
  },
];

const plain = (s: string) => s.toLowerCase().replace(/[\u2018\u2019\u02bc]/g, "'").replace(/\s+/g, ' ');

/** Warnings for each kind of instruction found in `text`. */
function instructionsIn(text: unknown, path: string, label: string, warn: (path: string, message: string) => void) {
  if (typeof text !== 'string' || !text) return;
  const s = plain(text);
  for (const { re, says, instead } of INSTRUCTIONS) {
    const m = re.exec(s);
    if (!m) continue;
    // The match to the end of its word: "~/.ssh/id_rsa", not "~/".
    const rest = s.slice(m.index + m[0].length);
    const word = m[0].endsWith('>') ? m[0] : m[0] + rest.slice(0, Math.max(0, rest.search(/\s|$/)));
    const quoted = word.replace(/^[^\p{L}\p{N}~$%<./]+/u, '').replace(/[.,;:!?)"']+$/u, '').slice(0, 40);
    warn(path, `${label} ${says} ("${quoted}"): ${instead}.`);
  }
}

/** `description` and `title` anywhere in an inputSchema (as written out: no references left). */
function schemaInstructions(node: unknown, path: string, warn: (path: string, message: string) => void, depth = 0) {
  if (depth > 64 || typeof node !== 'object' || node === null) return;
  if (Array.isArray(node)) return node.forEach((x, i) => schemaInstructions(x, ptr(path, i), warn, depth + 1));
  for (const [key, value] of Object.entries(node)) {
    if ((key === 'description' || key === 'title') && typeof value === 'string') instructionsIn(value, ptr(path, key), `\`${key}\``, warn);
    else if (key !== 'enum' && key !== 'const' && key !== 'default' && key !== 'examples') schemaInstructions(value, ptr(path, key), warn, depth + 1);
  }
}

const SAYS_WHAT_IT_RETURNS =
  /\b(returns?|returning|gives?|lists?|shows?|tells?|reports?|answers?|responds?|replies|yields?|outputs?|provides?|gets?|fetch(es)?|reads?|looks? up|counts?|results?|with (the|its|their|a|an|each)|confirm(s|ation)?)\b/i;

const squash = (s: string) =>
  s.toLowerCase().replace(/\b(the|a|an)\b/g, '').replace(/[^\p{L}\p{N}]+/gu, '');

/**
 * Advice on a checked manifest: never a refusal. Each warning points at what it is about.
 * What a destructive tool returns is not asked for: the person approves what it does.
 */
export function lintManifest(manifest: Manifest): FieldError[] {
  // Also run by the CLI on manifests that were refused, so nothing here assumes a checked shape.
  const out: FieldError[] = [];
  const warn = (path: string, message: string) => out.push({ path, message });

  if (!manifest.description) warn('/description', 'The description is empty; people read it in the catalog before installing.');
  instructionsIn(manifest.name, '/name', 'The name', warn);
  instructionsIn(manifest.description, '/description', 'The description', warn);
  try {
    const url = new URL(str(manifest.webhook));
    if (url.protocol === 'http:' && url.hostname !== 'localhost' && url.hostname !== '127.0.0.1' && url.hostname !== '[::1]') {
      warn('/webhook', 'The webhook uses http; use https so calls and their arguments are encrypted on the way.');
    }
  } catch {
    // checkManifest has already refused a bad URL.
  }

  (Array.isArray(manifest.tools) ? manifest.tools : []).forEach((tool, i) => {
    if (!isPlainObject(tool)) return;
    const at = ptr('/tools', i);
    const sound = soundsDestructive(tool);
    if (sound && tool.readOnly) {
      warn(ptr(at, sound.field), `\`${tool.name}\` sounds destructive ("${sound.verb}") but is marked \`readOnly\`; if it changes or sends anything, mark it \`destructive: true\` instead, so the person approves each call.`);
    } else if (sound && !tool.destructive) {
      warn(ptr(at, sound.field), `\`${tool.name}\` sounds destructive ("${sound.verb}") but is not marked \`destructive: true\`; apps would run it without asking the person. Mark it, or reword it if it changes nothing.`);
    }
    const first = str(tool.name).split('_')[0]!;
    if (tool.destructive && READ_VERBS.has(first)) {
      warn(ptr(at, 'destructive'), `\`${tool.name}\` sounds read-only ("${first}") but is marked destructive; every call will wait for the person's approval. Mark it \`readOnly\` if it changes nothing.`);
    }
    if (tool.confirm && !tool.destructive) {
      warn(ptr(at, 'confirm'), '`confirm` has no effect unless the tool is `destructive`: the add-on is only asked to describe calls that need approval.');
    }
    if (!tool.destructive && !SAYS_WHAT_IT_RETURNS.test(str(tool.summary))) {
      warn(ptr(at, 'summary'), 'The summary does not say what the tool returns; models choose tools by it. Add, for example, "…and returns each note\'s id and title."');
    }
    instructionsIn(tool.title, ptr(at, 'title'), 'The title', warn);
    instructionsIn(tool.summary, ptr(at, 'summary'), 'The summary', warn);
    schemaInstructions(tool.inputSchema, ptr(at, 'inputSchema'), warn);
    schemaInstructions(tool.outputSchema, ptr(at, 'outputSchema'), warn);
    if (tool.readOnly && tool.idempotent !== undefined) {
      warn(ptr(at, 'idempotent'), '`idempotent` says nothing of a `readOnly` tool: repeating a call that changes nothing changes nothing. Leave it out.');
    }
    (Array.isArray(tool.arguments) ? tool.arguments : []).forEach((arg, j) => {
      if (!isPlainObject(arg)) return;
      const argAt = ptr(at, 'arguments', j);
      instructionsIn(arg.summary, ptr(argAt, 'summary'), `The summary of \`${arg.name}\``, warn);
      const argKind: unknown = arg.kind;
      const choices: unknown[] = isPlainObject(argKind) && Array.isArray(argKind.choice) ? argKind.choice : [];
      choices.forEach((c, k) => instructionsIn(c, ptr(argAt, 'kind', 'choice', k), 'This choice', warn));
      if (!arg.summary) {
        warn(ptr(argAt, 'summary'), `Argument \`${arg.name}\` has no summary; say what it is and in which unit or format, so a model can fill it.`);
      } else if (squash(str(arg.summary)) === squash(str(arg.name))) {
        warn(ptr(argAt, 'summary'), `The summary of \`${arg.name}\` only repeats its name; say what it is and in which unit or format.`);
      }
      const kind: unknown = arg.kind;
      const number = isPlainObject(kind) && isPlainObject(kind.number) ? kind.number : undefined;
      if (number && number.minimum === undefined && number.maximum === undefined) {
        warn(ptr(argAt, 'kind', 'number'), `Argument \`${arg.name}\` has no minimum or maximum; give the range the add-on accepts, so other values are refused before they reach it.`);
      }
    });
    const props = tool.inputSchema?.properties;
    if (isPlainObject(props)) {
      for (const [name, schema] of Object.entries(props)) {
        if (isPlainObject(schema) && !schema.description) {
          warn(ptr(at, 'inputSchema', 'properties', name), `Property \`${name}\` has no description; say what it is, so a model can fill it.`);
        }
      }
    }
  });
  // A token reaches only the tools that name its provider: a provider none names is connected for nothing.
  const named = new Set((Array.isArray(manifest.tools) ? manifest.tools : []).flatMap((t) => (isPlainObject(t) && Array.isArray(t.accounts) ? t.accounts : [])));
  (Array.isArray(manifest.accounts) ? manifest.accounts : []).forEach((a, i) => {
    if (isPlainObject(a) && typeof a.provider === 'string' && !named.has(a.provider)) {
      warn(ptr('/accounts', i), `No tool names the provider \`${a.provider}\` in its \`accounts\`, so no delivery carries its token; add it to the tools that act on the person's account there.`);
    }
  });
  // Patterns that backtrack in the add-on's or an app's engine (Toolport's own cannot).
  out.push(...patternWarnings((Array.isArray(manifest.tools) ? manifest.tools : []).map((t, i) => [ptr('/tools', i, 'inputSchema'), isPlainObject(t) ? t.inputSchema : undefined] as const)));
  return out;
}
