/**
 * `npm run docs`: writes every generated reference under docs/reference/ (the
 * console's assets are built first, as `npm run build` does: the routes
 * reference builds the app, which serves them).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { buildConsoleAssets } from '../../console/build.js';
import { REFERENCES } from './references.js';

const REPO = join(import.meta.dirname, '..', '..');

await buildConsoleAssets();
for (const { file, render } of REFERENCES) {
  const path = join(REPO, file);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, await render());
  process.stdout.write(`wrote ${file}\n`);
}
