#!/usr/bin/env node
// The compiled CLI; `npm run build` (run by `npm start`) produces dist/.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(import.meta.resolve('../dist/cli/hooklog.js'));
if (!existsSync(main)) {
  process.stderr.write('hooklog: not built yet: run `npm run build` first (`npm start` builds too)\n');
  process.exit(1);
}
await import('../dist/cli/hooklog.js');
