/**
 * CSV export (RFC 4180) of a result that may hold attacker-chosen text. A
 * spreadsheet runs a cell that starts with `=`, `+`, `-` or `@` (and, in some,
 * a tab or carriage return) as a formula: such a cell is prefixed with `'`, so
 * it opens as the text it was. Numbers are written as they are (a negative
 * count is a number, not a formula). Then its invisible and control
 * characters are drawn as `⟨U+202E⟩` (display.ts), as on the pages: a
 * spreadsheet would obey a bidi override (`\u202Eecnarf` shows as "france")
 * and keep a NUL. CSV is the whole value: nothing is clipped, and the drawing
 * is exact (`fromVisible` undoes it).
 */
import { visible } from './display.js';

const FORMULA_START = /^[=+\-@\t\r]/;

/** One cell as CSV text: neutralised, drawn visibly, then quoted when it holds a quote or comma. */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  let text = typeof value === 'string' ? value : JSON.stringify(value);
  if (FORMULA_START.test(text) && !/^-?\d+(\.\d+)?$/.test(text)) text = `'${text}`;
  text = visible(text);
  // Line breaks are drawn by now: only a quote or a comma needs quoting.
  return /[",]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function toCsv(columns: readonly string[], rows: ReadonlyArray<Readonly<Record<string, unknown>>>): string {
  const lines = [columns.map(csvCell).join(',')];
  for (const row of rows) lines.push(columns.map((c) => csvCell(row[c])).join(','));
  return lines.join('\r\n') + '\r\n';
}
