// What `toolport dev` (and a push made while it runs) says of the developer's own install.
import type { OwnInstall } from '@toolport/core/api';

const quoted = (names: string[]) => names.map((n) => `"${n}"`).join(', ');

/**
 * What became of the developer's own install, and what to do about it; `undefined`/null: it did not
 * follow (no dev session, or a Toolport without them), so it stays on the release they accepted.
 */
export function ownInstallLines(own: OwnInstall | null | undefined, o: { baseUrl: string; id: string; version?: number }): string[] {
  const installs = `${o.baseUrl}/addons`;
  if (!own) {
    return [`Your install stays on the release you accepted: accept ${o.version ? `version ${o.version}` : 'the update'} at ${installs} to use it from your apps.`];
  }
  if (own.status === 'not_installed') {
    return [`You have not installed ${o.id} yourself, so no app of yours sees it: install it at ${installs}/${o.id}, and your install follows each push while \`toolport dev\` runs.`];
  }
  if (own.status === 'held') {
    return [
      `Your install stays on version ${own.accepted}: version ${own.version} makes a tool less safe, which only you can accept, at ${installs} (your later pushes follow again once you have):`,
      ...own.lessSafe.map((l) => `  ${l.tool}: ${l.why}`),
    ];
  }
  const lines = [
    own.on === 0
      ? `Your install now uses version ${own.version}, but none of its tools is switched on: switch them on at ${installs} to call them from your apps.`
      : own.changed.length
        ? `Your install now uses version ${own.version}; your apps were told the tools changed (${quoted(own.changed)}).`
        : `Your install now uses version ${own.version}; nothing your apps see of it changed.`,
  ];
  if (own.on > 0 && own.notSwitchedOn.length) lines.push(`Not switched on in your install: ${quoted(own.notSwitchedOn)} (switch them on at ${installs}).`);
  if (own.missingSettings.length) {
    lines.push(`Your install has no value for ${quoted(own.missingSettings)}, which version ${own.version} requires: set it at ${installs}/${o.id}, or its calls are refused.`);
  }
  return lines;
}
