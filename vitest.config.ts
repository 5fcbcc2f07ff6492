import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // chdb allows one engine per process: every test file gets its own process.
    pool: 'forks',
    include: ['**/*.test.ts'],
    // *.corpora.test.ts need the third-party corpora beside the repo: `npm run test:corpora` runs them.
    exclude: ['**/node_modules/**', '**/dist/**', 'test/.kafka/**', '**/*.corpora.test.ts', '**/*.browser.test.ts'],
    // Integration tests talk to a real broker and a real ClickHouse engine on a 2-core machine.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 60_000,
    // One Kafka broker for the run (or KAFKA_BROKERS); tests get it through test/kafka/inject.ts. The console's
    // assets are built once, as npm run build does.
    globalSetup: ['test/kafka/global-setup.ts', 'console/global-setup.ts'],
  },
});
