/**
 * CSV export (RFC 4180) of a result that may hold attacker-chosen text. A
 * spreadsheet runs a cell that starts with `=`, `+`, `-` or `@` (and, in some,
 * a tab or carriage return) as a formula: such a cell is prefixed with `'`, so
 * it opens as the text it was. Numbers are written as they are (a negative
 * count is a number, not a formula).
 */

const FORMULA_START = /^[=+\-@\t\r]/;

/** One cell as CSV text: neutralised, then quoted when it holds a quote, comma or line break. */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  let text = typeof value === 'string' ? value : JSON.stringify(value);
  if (FORMULA_START.test(text) && !/^-?\d+(\.\d+)?$/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function toCsv(columns: readonly string[], rows: ReadonlyArray<Readonly<Record<string, unknown>>>): string {
  const lines = [columns.map(csvCell).join(',')];
  for (const row of rows) lines.push(columns.map((c) => csvCell(row[c])).join(','));
  return lines.join('\r\n') + '\r\n';
}
