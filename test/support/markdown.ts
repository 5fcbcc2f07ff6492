/**
 * Reading the repository's Markdown as a reader's browser would: its links
 * and the anchors its headings make (GitHub's slugs). Used by test/docs.test.ts.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const SKIP = new Set(['node_modules', 'dist', 'data', '.git', '.cache', '.kafka']);

/** Every .md file under `dir`, outside dependencies, builds and data. */
export function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (SKIP.has(e.name)) return [];
    const path = join(dir, e.name);
    if (e.isDirectory()) return markdownFiles(path);
    return e.name.endsWith('.md') ? [path] : [];
  });
}

/** The text outside fenced code blocks (a fence is three backticks or more at a line's start, indented or not). */
export function prose(markdown: string): string {
  return markdown.replace(/^ *(`{3,})[^\n]*\n[\s\S]*?^ *\1`*[ \t]*$/gm, '');
}

/** Link targets of a Markdown text, outside code blocks and code spans. */
export function linkTargets(markdown: string): string[] {
  const text = prose(markdown).replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
}

/** Relative link targets (no scheme, not only an anchor). */
export function relativeLinks(markdown: string): string[] {
  return linkTargets(markdown).filter((t) => !/^([a-z][a-z0-9+.-]*:|#)/i.test(t));
}

/**
 * The anchors a document's headings make on GitHub: the heading's text without
 * its Markdown (code ticks, emphasis, link targets), lower-cased, with every
 * character other than a letter, digit, `_`, `-` or space removed and spaces
 * turned into `-`; a repeated slug gets `-1`, `-2`…
 */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const text = m[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/[`*]/g, '')
      .replace(/<[^>]+>/g, '');
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  for (const m of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(m[1]!);
  return out;
}
