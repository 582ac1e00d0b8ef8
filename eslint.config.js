// Lint rules (formatting is Prettier's job). typescript-eslint's recommended and stylistic
// sets without type information: fast enough to run on every test run on 2 cores.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '.local/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...tseslint.configs.stylistic,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly', fetch: 'readonly' } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-non-null-assertion': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      // Interfaces and type aliases each have their place (aliases for unions and row shapes).
      '@typescript-eslint/consistent-type-definitions': 'off',
      'no-control-regex': 'off',
      // No-op callbacks are deliberate where they appear.
      '@typescript-eslint/no-empty-function': 'off',
    },
  },
  // One Kafka wrapper (packages/platform/src/kafka): no other file imports a Kafka client library,
  // so switching the library (KAFKA_DRIVER) stays a change inside that folder.
  {
    files: ['**/*.{ts,tsx,js,mjs,cjs}'],
    ignores: ['packages/platform/src/kafka/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['kafkajs', 'kafkajs/*', '@platformatic/kafka', '@platformatic/kafka/*', '@confluentinc/*', 'node-rdkafka', 'kafka-node'],
              message: 'Kafka client libraries are used only inside packages/platform/src/kafka (the wrapper); use its types from @ingest/platform.',
            },
          ],
        },
      ],
    },
  },
  // The dashboard web app runs in the browser (its own tsconfig adds the DOM types).
  { files: ['services/console/web/**/*.{ts,tsx}'], languageOptions: { globals: globals.browser } },
);
