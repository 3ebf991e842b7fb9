#!/usr/bin/env node
// The toolport CLI entry: the one place that reads process.env, argv and stdin.
import { createInterface } from 'node:readline';
import { runCli } from './cli';

/** Piped: all of stdin. A terminal: the first line typed or pasted (Enter ends it, no Ctrl-D needed). */
async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) {
    const rl = createInterface({ input: process.stdin });
    try {
      for await (const line of rl) if (line.trim()) return line;
      return '';
    } finally {
      rl.close();
    }
  }
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  readStdin,
  stdinIsTTY: process.stdin.isTTY === true,
  // `npm run toolport` in the Toolport repository runs from its root; paths the person typed are
  // relative to where they typed them (INIT_CWD). Installed, `npx toolport` runs where it is typed.
  cwd: process.env.npm_lifecycle_event === 'toolport' && process.env.INIT_CWD ? process.env.INIT_CWD : process.cwd(),
});
