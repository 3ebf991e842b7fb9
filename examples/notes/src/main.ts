// `npm run notes`: the Notes add-on on http://localhost:$NOTES_PORT/webhook.
//   NOTES_PORT    default 8787
//   NOTES_SECRET  the whsec_ secret shown at registration; several, comma-separated, during a rotation
//   NOTES_FILE    optional JSON file to keep notes across restarts (default: memory only)
//   NOTES_CLOUD_USERINFO_URL  the Notes Cloud provider's userinfo endpoint (default: the placeholder in addon.ts)
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveNode } from '@toolport/addon-kit';
import { createNotesAddon, DEFAULT_WEBHOOK, NOTES_CLOUD_USERINFO } from './addon';
import { NoteStore } from './store';

const port = Number(process.env.NOTES_PORT ?? 8787);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`NOTES_PORT must be a port number, got "${process.env.NOTES_PORT}".`);
  process.exit(2);
}
const secrets = (process.env.NOTES_SECRET ?? '').split(',').map((s) => s.trim()).filter(Boolean);
const bad = secrets.find((s) => !/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(s));
if (bad !== undefined) {
  console.error('NOTES_SECRET must be whsec_ secrets (comma-separated during a rotation).');
  process.exit(2);
}

const webhook = `http://localhost:${port}/webhook`;
const userinfoUrl = process.env.NOTES_CLOUD_USERINFO_URL || NOTES_CLOUD_USERINFO;
const addon = createNotesAddon(new NoteStore(process.env.NOTES_FILE || undefined), webhook, { userinfoUrl });
const manifestPath = path.relative(process.cwd(), fileURLToPath(new URL('../addon.json', import.meta.url)));
const server = await serveNode(addon.handler({ secrets }), port);
const actualPort = (server.address() as { port: number }).port;

console.log(`Notes add-on listening.
  webhook URL: http://localhost:${actualPort}/webhook
  manifest:    ${manifestPath}${webhook === DEFAULT_WEBHOOK ? '' : `\n  (addon.json says ${DEFAULT_WEBHOOK}; push with --webhook http://localhost:${actualPort}/webhook)`}`);
if (!secrets.length) {
  console.log(`  NOTES_SECRET is not set: only the registration ping is answered. Register with
    npm run -s toolport -- addon push ${manifestPath} --webhook http://localhost:${actualPort}/webhook
  then restart with NOTES_SECRET=<the whsec_ secret it prints>.`);
}

const stop = () => server.close(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
