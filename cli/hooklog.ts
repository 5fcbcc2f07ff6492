/**
 * The `hooklog` command (bin/hooklog.js runs its build): the command tree of cli/main.ts on the process's
 * arguments. A hooklog error is one line naming its code; anything else is logged whole.
 */
import { HooklogError } from '../platform/errors.js';
import { createLogger } from '../platform/log.js';
import { program } from './main.js';

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof HooklogError) {
    process.stderr.write(`hooklog: ${err.code}: ${err.message}\n`);
  } else {
    createLogger().fatal({ err }, 'hooklog failed');
  }
  process.exitCode = 1;
});
