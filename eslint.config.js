// Lint: typescript-eslint's recommended rules, plus the architectural rules a type checker cannot
// see: routes are thin adapters, so they reach the domain only through `@toolport/core`'s index,
// never drizzle or a file deep inside core; the core reads the time through its clock and opens
// database connections only in its database port.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '**/.toolport/**', '.test-bundle/**', 'bench/results/**', 'packages/core/drizzle/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2023, sourceType: 'module' },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // A `let` a closure reads before its one assignment (a stream's cleanup) stays a `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // Off outside the server: tests and the bench read JSON answers, the add-on kit's generics
      // need `Arg<any>` placeholders, the dashboard and CLI read the API's JSON.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['packages/core/src/**/*.ts', 'apps/api/src/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'error' },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { globals: globals.node },
  },
  {
    // One clock (svc.clock), so a test moving it moves every time the core reads.
    files: ['packages/core/src/**/*.ts'],
    ignores: ['packages/core/src/clock.ts'],
    rules: {
      'no-restricted-properties': ['error', { object: 'Date', property: 'now', message: 'Read the time through svc.clock (the clock port)' }],
      'no-restricted-syntax': ['error', { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'Read the time through svc.clock (the clock port)' }],
    },
  },
  {
    // Every connection is the database port's to open and to close (db/client.ts).
    files: ['packages/core/src/**/*.ts'],
    ignores: ['packages/core/src/db/**'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: ['postgres', '@electric-sql/pglite'].map((name) => ({ name, message: 'Open connections in the database port (db/client.ts).' })),
        patterns: [{ group: ['drizzle-orm/postgres-js', 'drizzle-orm/postgres-js/*', 'drizzle-orm/pglite', 'drizzle-orm/pglite/*'], message: 'Open connections in the database port (db/client.ts).' }],
      }],
    },
  },
  {
    files: ['apps/api/src/**/*.ts', 'packages/cli/src/**/*.ts', 'packages/addon-kit/src/**/*.ts', 'examples/*/src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [{ name: 'drizzle-orm', message: 'SQL lives in packages/core: call a verb from @toolport/core.' }],
        patterns: [
          { group: ['drizzle-orm/*'], message: 'SQL lives in packages/core: call a verb from @toolport/core.' },
          // The CLI loads only the manifest checks and the audit chain's verifier, through core's named
          // subpaths, not all of core, and the API's shapes through `@toolport/core/api` (types only).
          { group: ['@toolport/core/*', '!@toolport/core/manifest', '!@toolport/core/lint', '!@toolport/core/audit-chain', '!@toolport/core/api', '**/packages/core/**', '**/core/src/**'], message: 'Import from @toolport/core (its index), not a file inside core.' },
        ],
      }],
    },
  },
);
