#!/usr/bin/env node
// The compiled CLI; `npm run build` (run by `npm start`) produces dist/.
import '../dist/cli/main.js';
