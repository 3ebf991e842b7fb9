import type { FieldError } from '../errors';
import { isPlainObject, ptr } from './schema';
import type { Manifest, ManifestTool } from './types';

/** Verbs whose tools change or send something a person would want to approve first. */
const DESTRUCTIVE_VERBS = [
  'delete', 'remove', 'drop', 'erase', 'purge', 'destroy', 'wipe', 'overwrite', 'replace', 'send',
  'post', 'publish', 'unpublish', 'pay', 'transfer', 'cancel', 'revoke', 'archive', 'unsubscribe',
  'kill', 'terminate', 'reset', 'clear', 'truncate', 'charge', 'refund', 'withdraw', 'ban',
  'uninstall', 'deploy', 'submit', 'purchase', 'buy', 'trash', 'expunge', 'unlink', 'shred',
];
const IRREGULAR: Record<string, string> = { sent: 'send', paid: 'pay', bought: 'buy', withdrew: 'withdraw', withdrawn: 'withdraw' };
/** Verbs a tool name starts with when it only reads. */
const READ_VERBS = new Set([
  'get', 'list', 'search', 'find', 'read', 'show', 'fetch', 'lookup', 'look', 'view', 'count', 'query',
  'describe', 'check', 'preview', 'browse', 'inspect', 'peek', 'lists', 'gets', 'finds', 'searches',
  'reads', 'shows', 'fetches', 'looks', 'counts', 'describes', 'checks', 'returns',
]);

/** Every inflection of each verb (deletes, deleted, deleting, dropped...) → the verb. */
const DESTRUCTIVE_FORMS = (() => {
  const forms = new Map<string, string>(Object.entries(IRREGULAR));
  for (const v of DESTRUCTIVE_VERBS) {
    const last = v[v.length - 1]!;
    const stem = last === 'e' ? v.slice(0, -1) : v;
    for (const f of [v, v + 's', v + 'es', stem + 'ed', stem + 'ing', v + last + 'ed', v + last + 'ing', stem + 'ion']) {
      if (!forms.has(f)) forms.set(f, v);
    }
  }
  return forms;
})();

const str = (v: unknown) => (typeof v === 'string' ? v : '');
const words = (s: unknown) => str(s).toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);

/** The destructive verb a tool's name, title or summary uses, and where. */
function soundsDestructive(tool: ManifestTool): { field: 'name' | 'title' | 'summary'; verb: string } | undefined {
  const fields = [
    ['name', str(tool.name).split('_').filter(Boolean)],
    ['title', words(tool.title).slice(0, 3)],
    ['summary', words(tool.summary).slice(0, 3)],
  ] as const;
  for (const [field, tokens] of fields) {
    // "list_sent_emails", "Lists posts": the leading verb reads, the rest are nouns.
    if (tokens.length && READ_VERBS.has(tokens[0]!)) continue;
    for (const t of tokens) {
      const verb = DESTRUCTIVE_FORMS.get(t);
      if (verb) return { field, verb };
    }
  }
  return undefined;
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
    (Array.isArray(tool.arguments) ? tool.arguments : []).forEach((arg, j) => {
      if (!isPlainObject(arg)) return;
      const argAt = ptr(at, 'arguments', j);
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
  return out;
}
