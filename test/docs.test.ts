/**
 * The documentation keeps its word. Every relative link in the repository's
 * Markdown leads to a file that exists, and every #anchor to a heading of the
 * document it names; and the references under docs/reference/ are what the
 * code generates now (`npm run docs`).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { metricModules } from '../docs/generate/metrics.js';
import { REFERENCES } from '../docs/generate/references.js';
import { anchors, linkTargets, markdownFiles, relativeLinks } from './support/markdown.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const read = (path: string) => readFileSync(path, 'utf8');
const files = markdownFiles(REPO);
const name = (file: string) => relative(REPO, file);

describe('Markdown links', () => {
  it("finds the documents and their links (README, ARCHITECTURE and the folders' notes)", () => {
    expect(files.map(name)).toEqual(
      expect.arrayContaining(['README.md', 'ARCHITECTURE.md', 'BENCHMARKS.md', 'bench/HISTORY.md']),
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
