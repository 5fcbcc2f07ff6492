/**
 * The documentation keeps its word. Every relative link in the repository's
 * Markdown leads to a file that exists, and every #anchor to a heading of the
 * document it names; every test ARCHITECTURE.md names as proof exists; every
 * `hooklog …` command the README, the guides and the components' notes show
 * is one the CLI has, with options it has, and every `test/simulated-org/main.ts …` they and
 * the examples show takes only options the simulated org has; the README stays short and its map
 * reaches every guide; and the references under docs/reference/ are what the
 * code generates now (`npm run docs`).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { program } from '../cli/main.js';
import { metricModules } from '../docs/generate/metrics.js';
import { REFERENCES } from '../docs/generate/references.js';
import { SIM_OPTIONS } from './simulated-org/main-options.js';
import { anchors, codeLines, codeSpans, linkTargets, markdownFiles, relativeLinks } from './support/markdown.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const read = (path: string) => readFileSync(path, 'utf8');
const files = markdownFiles(REPO);
const name = (file: string) => relative(REPO, file);

describe('Markdown links', () => {
  it("finds the documents and their links (README, ARCHITECTURE and the folders' notes)", () => {
    expect(files.map(name)).toEqual(
      expect.arrayContaining(['README.md', 'ARCHITECTURE.md', 'BENCHMARKS.md', 'bench/HISTORY.md', 'docs/README.md']),
    );
    expect(relativeLinks(read(join(REPO, 'ARCHITECTURE.md'))).length).toBeGreaterThan(20);
    expect(relativeLinks('[a](x.md) [b](https://e.example/y) [c](#here) `[d](no.md)` [e](y.md "title")')).toEqual([
      'x.md',
      'y.md',
    ]);
    expect([
      ...anchors('# A `b/c.ts` (d)\n```\n# not a heading\n```\n## Ünïcode & [link](x.md)\n## A b/c.ts d'),
    ]).toEqual(['a-bcts-d', 'ünïcode--link', 'a-bcts-d-1']);
  });

  it('every relative link resolves to a file or folder of the repository, and every #anchor to a heading', () => {
    const cache = new Map<string, Set<string>>();
    const anchorsOf = (path: string) => cache.get(path) ?? cache.set(path, anchors(read(path))).get(path)!;
    const broken = files.flatMap((file) =>
      linkTargets(read(file)).flatMap((target) => {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return [];
        const [path = '', anchor] = decodeURIComponent(target).split('#');
        const to = path === '' ? file : resolve(dirname(file), path.replace(/\?.*$/, ''));
        const where = `${name(file)} → ${target}`;
        if (!existsSync(to)) return [`${where}: no such file`];
        if (anchor === undefined || anchor === '') return [];
        if (statSync(to).isDirectory() || !to.endsWith('.md')) return [`${where}: an anchor into a non-Markdown file`];
        return anchorsOf(to).has(anchor) ? [] : [`${where}: no such heading`];
      }),
    );
    expect(broken).toEqual([]);
  });

  it('every source file ARCHITECTURE.md names by its path (the tests that prove each guarantee) exists', () => {
    const paths = codeSpans(read(join(REPO, 'ARCHITECTURE.md'))).filter((s) => /^[\w.+-]+(\/[\w.+-]+)+\.ts$/.test(s));
    expect(paths.filter((p) => p.endsWith('.test.ts')).length).toBeGreaterThan(40);
    expect(paths.filter((p) => !existsSync(join(REPO, p)))).toEqual([]);
  });
});

describe('README and the map', () => {
  const readme = read(join(REPO, 'README.md'));

  it('README.md is at most 250 lines, keeps its two commands and links the map', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
    expect(codeLines(readme)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^npm install && npm start$/),
        expect.stringMatching(/^npm install && npm test$/),
      ]),
    );
    expect(relativeLinks(readme)).toContain('docs/README.md');
  });

  it('every guide and reference under docs/ is on the map (docs/README.md)', () => {
    const map = new Set(relativeLinks(read(join(REPO, 'docs', 'README.md'))).map((t) => t.replace(/#.*$/, '')));
    const guides = files.map(name).filter((f) => f.startsWith('docs/') && f !== 'docs/README.md');
    expect(guides.length).toBeGreaterThan(20);
    expect(guides.filter((g) => !map.has(relative('docs', g)))).toEqual([]);
  });
});

/** A command shown in the docs: the words after `hooklog`, up to the end of that command. */
interface Shown {
  readonly doc: string;
  readonly text: string;
}

/** `npx hooklog …` and `node …bin/hooklog.js …` in code blocks and code spans; `hooklog …` in code spans. */
function shownCommands(doc: string, markdown: string): Shown[] {
  const out: Shown[] = [];
  const invocation =
    /(?:^|[\s(`])(?:npx hooklog|node \S*bin\/hooklog\.js)((?:\s+(?!&&|\|\||;|\||&(?:\s|$))[^\s;&|]+(?:\|[^\s;&|]+)*)*)/g;
  // A pipe in a table cell is written \\|.
  const spans = codeSpans(markdown).map((s) => s.replace(/\\\|/g, '|'));
  for (const text of [...codeLines(markdown), ...spans])
    for (const m of text.matchAll(invocation)) out.push({ doc, text: m[1]!.trim() });
  for (const span of spans) if (/^hooklog /.test(span)) out.push({ doc, text: span.slice(8) });
  return out;
}

const quoted = /"(?:[^"\\]|\\.)*"|'[^']*'/g;

function lineage(c: Command): Command[] {
  return c.parent ? [c, ...lineage(c.parent)] : [c];
}

/**
 * What the CLI makes of a shown command: the words naming subcommands (an alternative `plan|apply` names each, an
 * optional `[list]` names it beside its parent), a first word that names none, and the options that none of the
 * commands named (nor their parents) takes.
 */
function check(text: string): { commands: string[]; notACommand?: string; unknown: string[] } {
  const words = text.replace(quoted, '""').split(/\s+/).filter(Boolean);
  let at: Command[] = [program];
  const named: Command[] = [program];
  const flags: string[] = [];
  let notACommand: string | undefined;
  let args = false;
  const takesValue = (flag: string) =>
    named.flatMap(lineage).some((c) => c.options.some((o) => (o.long === flag || o.short === flag) && o.required));
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    const flag = /^[[(|]?(--?[a-zA-Z][\w-]*)/.exec(word)?.[1];
    if (flag) {
      flags.push(flag);
      if (!args && !word.includes('=') && takesValue(flag)) i++;
      continue;
    }
    if (args) continue;
    const optional = /^\[([a-z][a-z-]*)\]$/.exec(word)?.[1];
    const alternatives = (optional ?? word).split('|');
    const next = alternatives.map((a) => at.flatMap((c) => c.commands).find((s) => s.name() === a));
    if (next.some((n) => n === undefined)) {
      if (at.length === 1 && at[0] === program && /^[a-z][a-z-]+$/.test(word)) notACommand = word;
      args = true;
      continue;
    }
    at = optional ? [...at, ...(next as Command[])] : (next as Command[]);
    named.push(...(next as Command[]));
  }
  const known = new Set([
    '--help',
    '-h',
    ...named.flatMap(lineage).flatMap((c) => c.options.flatMap((o) => [o.long, o.short])),
  ]);
  return {
    commands: at.map((c) =>
      lineage(c)
        .reverse()
        .slice(1)
        .map((l) => l.name())
        .join(' '),
    ),
    ...(notACommand ? { notACommand } : {}),
    unknown: flags.filter((f) => !known.has(f)),
  };
}

describe('commands shown in the documentation', () => {
  // The references are generated from the CLI itself, and the history is a record of what ran then.
  const docs = files.map(name).filter((f) => !f.startsWith('docs/reference/') && f !== 'bench/HISTORY.md');
  const shown = docs.flatMap((doc) => shownCommands(doc, read(join(REPO, doc))));

  it('finds them, in code blocks and code spans, and reads them as the CLI would', () => {
    expect(shown.length).toBeGreaterThan(100);
    expect([...new Set(shown.map((s) => s.doc))]).toEqual(
      expect.arrayContaining(['README.md', 'docs/README.md', 'docs/detect/testing.md', 'docs/respond/response.md']),
    );
    expect(check('rules test --cases rules --junit x.xml')).toEqual({ commands: ['rules test'], unknown: [] });
    expect(check('rules test --cases --frobnicate').unknown).toEqual(['--frobnicate']);
    expect(check('-c hooklog.yaml actions list --state done').commands).toEqual(['actions list']);
    expect(check('hooks plan|apply|status [--org …] [--prune]')).toEqual({
      commands: ['hooks plan', 'hooks apply', 'hooks status'],
      unknown: [],
    });
    expect(check('actions [list] [--org …]')).toEqual({ commands: ['actions', 'actions list'], unknown: [] });
    expect(check('frobnicate --org acme').notACommand).toBe('frobnicate');
  });

  it('a code block runs hooklog as `npx hooklog` in a clone (a bare `hooklog` is "command not found" there)', () => {
    // In a shell block every line is a command; elsewhere (output, diagrams) only a line with the prompt.
    const bare = docs.flatMap((doc) => {
      const text = read(join(REPO, doc));
      return [
        ...codeLines(text, ['sh', 'bash', 'shell']).filter((line) => /^([A-Z_]+=\S+ )*hooklog /.test(line)),
        ...codeLines(text).filter((line) => /^\$ ([A-Z_]+=\S+ )*hooklog /.test(line)),
      ].map((line) => `${doc}: ${line}`);
    });
    expect(bare).toEqual([]);
  });

  it('every one names commands the CLI has, with options those commands take', () => {
    const wrong = shown.flatMap(({ doc, text }) => {
      const { notACommand, unknown } = check(text);
      return [...(notACommand ? [`no command "${notACommand}"`] : []), ...unknown.map((o) => `no option ${o}`)].map(
        (p) => `${doc}: hooklog ${text}: ${p}`,
      );
    });
    expect(wrong).toEqual([]);
  });
});

describe("the simulated org's commands the docs and examples show", () => {
  /** `test/simulated-org/main.ts …` up to the end of that command (a shell operator or a comment). */
  const simFlags = (text: string) =>
    [...text.matchAll(/test\/simulated-org\/main\.ts((?:\s+(?![&|;#])\S+)*)/g)].flatMap((m) =>
      [...m[1]!.matchAll(/(?:^|\s)--([a-z][\w-]*)/g)].map((f) => f[1]!),
    );
  const examples = readdirSync(join(REPO, 'examples'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => join('examples', f));
  const shownSim = [
    ...files.map((file) => {
      const text = read(file);
      return { doc: name(file), lines: [...codeLines(text), ...codeSpans(text)] };
    }),
    ...examples.map((doc) => ({ doc, lines: read(join(REPO, doc)).split('\n') })),
  ].flatMap(({ doc, lines }) => lines.flatMap((line) => simFlags(line).map((flag) => ({ doc, flag }))));

  it('finds them (the console try, the response, hook registration)', () => {
    expect(simFlags('npx tsx test/simulated-org/main.ts --oidc --user a:b:c & # --not-this')).toEqual(['oidc', 'user']);
    expect(shownSim.map((s) => s.flag)).toEqual(expect.arrayContaining(['oidc', 'issuer', 'hook-ca']));
  });

  it('use only options main.ts has', () => {
    const known = new Set(Object.keys(SIM_OPTIONS));
    expect(shownSim.filter((s) => !known.has(s.flag)).map((s) => `${s.doc}: --${s.flag}`)).toEqual([]);
  });
});

describe('generated references (npm run docs)', () => {
  for (const { file, render } of REFERENCES)
    it(`${file} is what the code generates now`, async () => {
      const committed = existsSync(join(REPO, file)) ? read(join(REPO, file)) : '(missing)';
      expect(committed, `${file} is stale: run npm run docs and commit it`).toBe(await render());
    });

  it('the metrics reference has every metric the source declares', async () => {
    const reference = read(join(REPO, 'docs/reference/metrics.md'));
    const declared = metricModules().flatMap((f) =>
      [...read(join(REPO, f)).matchAll(/name: '(hooklog_[a-z0-9_]+)'/g)].map((m) => m[1]!),
    );
    expect(declared.length).toBeGreaterThan(50);
    expect(declared.filter((m) => !reference.includes(`\`${m}\``))).toEqual([]);
  });
});
