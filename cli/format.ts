/**
 * Result rendering for `hooklog sql` and `hooklog query`: an aligned text
 * table for people, JSON and CSV (RFC 4180) for programs. Pure functions.
 */
import type { ResultSet } from '../platform/store/result-set.js';

export type { ResultSet };

export type OutputFormat = 'table' | 'json' | 'csv';

export function render(result: ResultSet, format: OutputFormat): string {
  switch (format) {
    case 'json':
      return JSON.stringify(result.rows, null, 2) + '\n';
    case 'csv':
      return (
        [result.columns, ...result.rows.map((r) => result.columns.map((c) => cell(r[c])))]
          .map((line) => line.map(csvField).join(','))
          .join('\r\n') + '\r\n'
      );
    case 'table':
      return table(result);
  }
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return '';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

function csvField(s: string): string {
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const MAX_CELL = 120;

function table({ columns, rows, whole = [] }: ResultSet): string {
  const cut = columns.map((c) => !whole.includes(c));
  const text = rows.map((r) => columns.map((c, i) => oneLine(cell(r[c]), cut[i]!)));
  const widths = columns.map((c, i) => Math.max(c.length, ...text.map((t) => t[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((s, i) => s.padEnd(widths[i]!))
      .join(' │ ')
      .trimEnd();
  const rule = widths.map((w) => '─'.repeat(w)).join('─┼─');
  const footer = `(${rows.length} row${rows.length === 1 ? '' : 's'})`;
  return [line(columns), rule, ...text.map(line), footer].join('\n') + '\n';
}

function oneLine(s: string, cut: boolean): string {
  const flat = s.replace(/\s*\n\s*/g, ' ');
  return cut && flat.length > MAX_CELL ? `${flat.slice(0, MAX_CELL - 1)}…` : flat;
}
