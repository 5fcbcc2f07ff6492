#!/usr/bin/env node
// The compiled CLI; `npm run build` (run by `npm start`) produces dist/.
import { existsSync } from 'node:fs';

const main = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write('hooklog: not built yet: run `npm run build` first (`npm start` builds too)\n');
  process.exit(1);
}
await import(main.href);
