import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where `buildDashboard()` writes the bundle and where the API serves it from. */
export const dashboardDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const distDir = path.join(dashboardDir, 'dist');
