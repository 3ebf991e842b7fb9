#!/usr/bin/env node
// The CLI is TypeScript run through tsx, like the rest of the workspace.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
