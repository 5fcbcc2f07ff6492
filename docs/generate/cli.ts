/**
 * The CLI reference: every command's `--help`, as commander prints it, from
 * the command tree `hooklog` runs (cli/main.ts), at a fixed width so the text
 * does not depend on the terminal that generated it.
 */
import type { Command } from 'commander';
import { program } from '../../cli/main.js';
import { preamble } from './markdown.js';

const WIDTH = 110;

/** Every command under `root`, depth first, with the words that name it (`rules test`). */
export function commands(root: Command = program): Array<{ words: string[]; command: Command }> {
  const out: Array<{ words: string[]; command: Command }> = [];
  const visit = (c: Command, words: string[]) => {
    out.push({ words, command: c });
    for (const sub of c.commands) visit(sub, [...words, sub.name()]);
  };
  visit(root, []);
  return out;
}

function help(c: Command): string {
  c.configureOutput({ getOutHelpWidth: () => WIDTH, getOutHasColors: () => false });
  return c.helpInformation().trimEnd();
}

export function cliReference(root: Command = program): string {
  const all = commands(root);
  const title = (words: string[]) => ['hooklog', ...words].join(' ');
  const slug = (words: string[]) => title(words).replace(/ /g, '-');
  return [
    preamble(
      'CLI reference',
      "Every command's `--help`. In a clone run them as `npx hooklog …` (after `npm run build`), in the image as\n" +
        '`node bin/hooklog.js …`. Every command takes `-c, --config <path>` (else `$HOOKLOG_CONFIG`, else\n' +
        '`./hooklog.yaml`, else the built-in default). Which guide explains each: [the map](../README.md#commands).',
    ),
    all.map(({ words }) => `- [${title(words)}](#${slug(words)})`).join('\n') + '\n',
    ...all.map(({ words, command }) => `## ${title(words)}\n\n\`\`\`text\n${help(command)}\n\`\`\`\n`),
  ].join('\n');
}
