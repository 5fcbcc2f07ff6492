import { defineConfig } from 'vitest/config';

/**
 * The browser suite (`npm run test:browser`): the console driven in a real
 * headless Chromium (Debian's package). Apart from `npm test` because it needs
 * the browser installed; .ci/run runs it after the others.
 */
export default defineConfig({
  test: {
    pool: 'forks',
    include: ['**/*.browser.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**', 'test/.kafka/**'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    teardownTimeout: 60_000,
    globalSetup: ['console/global-setup.ts'],
  },
});
