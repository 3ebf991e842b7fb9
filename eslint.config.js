// Lint: typescript-eslint's recommended rules, plus the one architectural rule of AGENTS.md that
// a type checker cannot see: routes are thin adapters, so they reach the domain only through
// `@toolport/core`'s index, never drizzle or a file deep inside core.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '**/.toolport/**', 'bench/results/**', 'packages/core/drizzle/**'] },
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
    files: ['apps/api/src/**/*.ts', 'packages/cli/src/**/*.ts', 'packages/addon-kit/src/**/*.ts', 'examples/*/src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [{ name: 'drizzle-orm', message: 'SQL lives in packages/core: call a verb from @toolport/core.' }],
        patterns: [
          { group: ['drizzle-orm/*'], message: 'SQL lives in packages/core: call a verb from @toolport/core.' },
          // The CLI loads only the manifest checks, through core's two named subpaths, not all of core.
          { group: ['@toolport/core/*', '!@toolport/core/manifest', '!@toolport/core/lint', '**/packages/core/**', '**/core/src/**'], message: 'Import from @toolport/core (its index), not a file inside core.' },
        ],
      }],
    },
  },
);
