// The conformance suite: hooklog against third-party material (sample events, published hook requests
// and answers, Sigma rules, Panther cases) that is not part of the repository. HOOKLOG_CORPORA_DIR names
// it (default ../shared/corpora); the set-up fails the run with a clear message when it is missing.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    pool: 'forks',
    include: ['**/*.corpora.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**', 'test/.kafka/**'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Some conformance tests append the samples to Kafka (platform/stream/kafka/large-page.corpora.test.ts).
    globalSetup: ['test/support/corpora-setup.ts', 'test/kafka/global-setup.ts'],
  },
});
