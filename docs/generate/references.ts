/**
 * The references under docs/reference/, each generated from the code it
 * describes: `npm run docs` writes them, test/docs.test.ts fails when a
 * committed one differs from what the code generates now.
 */
import { cliReference } from './cli.js';
import { configReference } from './config.js';
import { metricsReference } from './metrics.js';
import { routesReference } from './routes.js';

export const REFERENCES: ReadonlyArray<{ readonly file: string; readonly render: () => string | Promise<string> }> = [
  { file: 'docs/reference/configuration.md', render: () => configReference() },
  { file: 'docs/reference/cli.md', render: () => cliReference() },
  { file: 'docs/reference/metrics.md', render: () => metricsReference() },
  { file: 'docs/reference/http-routes.md', render: () => routesReference() },
];
