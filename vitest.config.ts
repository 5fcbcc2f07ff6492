import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import SlowestFirstSequencer from './test/support/sequencer.js';

export default defineConfig({
  test: {
    // chdb allows one engine per process: every test file gets its own process.
    pool: 'forks',
    // At least two files at a time, even on 2 cores (vitest's default is cores - 1): most of an integration test's
    // time is waiting (processes starting, group joins, poll intervals, a broker restarting), which another file's
    // work fills. A set of 21 of the slowest files took 387 s one at a time and 252 s two at a time on 2 cores.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // The slowest files first (by the last run's report, else the known slow ones): on a fresh clone vitest's own
    // order is largest file first, and the slowest files (kill -9 tests of a few lines over shared helpers) ran last.
    sequence: { sequencer: SlowestFirstSequencer },
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
