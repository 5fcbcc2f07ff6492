/**
 * The documentation keeps its word: every relative link in the repository's
 * Markdown files leads to a file or folder that exists, so a reader following
 * ARCHITECTURE.md's "Tests:" to the test that proves a guarantee finds it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SKIP = new Set(['node_modules', 'dist', 'data', '.git', '.cache', '.kafka']);

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (SKIP.has(e.name)) return [];
    const path = join(dir, e.name);
    if (e.isDirectory()) return markdownFiles(path);
    return e.name.endsWith('.md') ? [path] : [];
  });
}

/** Relative link targets of a Markdown text, outside code blocks and code spans. */
export function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
  const targets = [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  return targets.filter((t) => !/^([a-z][a-z0-9+.-]*:|#)/i.test(t));
}

describe('Markdown links', () => {
  const files = markdownFiles(REPO);

  it("finds the documents and their links (README, ARCHITECTURE and the folders' notes)", () => {
    const names = files.map((f) => relative(REPO, f));
    expect(names).toEqual(expect.arrayContaining(['README.md', 'ARCHITECTURE.md', 'BENCHMARKS.md']));
    expect(relativeLinks(readFileSync(join(REPO, 'ARCHITECTURE.md'), 'utf8')).length).toBeGreaterThan(20);
    expect(relativeLinks('[a](x.md) [b](https://e.example/y) [c](#here) `[d](no.md)` [e](y.md "title")')).toEqual([
      'x.md',
      'y.md',
    ]);
  });

  it('every relative link resolves to a file or folder of the repository', () => {
    const broken = files.flatMap((file) =>
      relativeLinks(readFileSync(file, 'utf8')).flatMap((target) => {
        const path = decodeURIComponent(target.replace(/[#?].*$/, ''));
        return path === '' || existsSync(resolve(dirname(file), path)) ? [] : [`${relative(REPO, file)} → ${target}`];
      }),
    );
    expect(broken).toEqual([]);
  });
});
