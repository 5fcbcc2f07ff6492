#!/usr/bin/env node
// The built CLI: `npm run build` (run by `npm start`) bundles it into one file, dist/hooklog.js (cli/build.ts).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(import.meta.resolve('../dist/hooklog.js'));
if (!existsSync(main)) {
  process.stderr.write('hooklog: not built yet: run `npm run build` first (`npm start` builds too)\n');
  process.exit(1);
}
await import('../dist/hooklog.js');
