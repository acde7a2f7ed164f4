// Lint: ESLint's and typescript-eslint's recommended rules (npm run lint; .ci/run runs it).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'data/**', 'coverage/**', 'node_modules/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // TypeScript checks names itself; ESLint's own check does not know Node's or the DOM's globals.
      'no-undef': 'off',
      // Data from outside is typed where it is validated; the remaining `any`s are listed in issue 17.
      '@typescript-eslint/no-explicit-any': 'off',
      // Control characters in patterns are deliberate: they find what a header or file may not hold.
      'no-control-regex': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
);
