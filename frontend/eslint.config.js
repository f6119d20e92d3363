// ESLint for the frontend (`npm run lint`, run by `make lint`): the recommended JavaScript and typescript-eslint
// rules, and React's rules of hooks with exhaustive dependency lists.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import reactHooks from 'eslint-plugin-react-hooks';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig([
  { ignores: ['dist/', 'src/api/schema.d.ts'] },
  {
    files: ['**/*.{ts,tsx}'],
    extends: [js.configs.recommended, tseslint.configs.recommended],
    languageOptions: { globals: globals.browser },
    plugins: { 'react-hooks': reactHooks },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'error',
      // a parameter a signature needs but the body does not use is named _x (as tsconfig's noUnusedParameters allows)
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // unit tests read into ECharts' option objects, whose types are wide unions: `any` there is the test's lens
    files: ['**/*.test.ts', '**/*.test.tsx'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // its test of large times writes a literal past 2^53 (line 103); the file is being changed by the navigation
    // work: a warning until that is in, then this block goes
    files: ['src/state/viewState.test.ts'],
    rules: { 'no-loss-of-precision': 'warn' },
  },
]);
