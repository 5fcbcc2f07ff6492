// Lint: typescript-eslint's recommended rules, plus the ones that keep tests honest.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'test/.kafka/', '.cache/', 'console/web/dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // prettier wraps code at 120; this catches what it cannot wrap (comments), leaving URLs, strings,
      // template literals and regular expressions whole.
      'max-len': [
        'error',
        { code: 120, ignoreUrls: true, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'it', property: 'skip', message: 'No skipped tests on main.' },
        { object: 'it', property: 'only', message: 'No focused tests on main.' },
        { object: 'it', property: 'todo', message: 'No todo tests on main.' },
        { object: 'describe', property: 'skip', message: 'No skipped tests on main.' },
        { object: 'describe', property: 'only', message: 'No focused tests on main.' },
        { object: 'test', property: 'skip', message: 'No skipped tests on main.' },
        { object: 'test', property: 'only', message: 'No focused tests on main.' },
      ],
    },
  },
  {
    // A wait's `until: (n) => n >= n` compared a count with itself when its parameter shadowed the count it
    // meant, and two tests could never pass; in tests a shadowed name is a bug waiting, so none is allowed.
    files: ['**/*.test.ts', 'test/**/*.ts'],
    rules: { '@typescript-eslint/no-shadow': ['error', { allow: ['_'] }] },
  },
  { files: ['bin/*.js', 'eslint.config.js'], languageOptions: { globals: { process: 'readonly' } } },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
);
