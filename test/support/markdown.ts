/**
 * Reading the repository's Markdown as a reader's browser would: its links,
 * the anchors its headings make (GitHub's slugs), and the commands its code
 * shows. Used by test/docs.test.ts.
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

/**
 * The lines of fenced code blocks, trimmed, a shell comment after ` # ` dropped; with `languages`, only those of
 * blocks in one of them (`sh`; '' for a block that names none).
 */
export function codeLines(markdown: string, languages?: readonly string[]): string[] {
  const out: string[] = [];
  let fence: string | null = null;
  let keep = false;
  for (const raw of markdown.split('\n')) {
    const open = /^ *(`{3,})\s*([\w-]*)/.exec(raw);
    if (open && (fence === null || open[1]!.length >= fence.length)) {
      fence = fence === null ? open[1]! : null;
      keep = fence !== null && (languages === undefined || languages.includes(open[2]!));
      continue;
    }
    if (fence !== null && keep) out.push(raw.replace(/\s+#\s.*$/, '').trim());
  }
  return out;
}

/** The code spans of the prose (outside fenced blocks). */
export function codeSpans(markdown: string): string[] {
  return [...prose(markdown).matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
}
