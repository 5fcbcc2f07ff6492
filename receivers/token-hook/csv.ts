/**
 * A small RFC 4180 CSV reader for lookup tables: comma-separated, records
 * ending in LF or CRLF, fields optionally in double quotes (with `""` for a
 * quote, and commas and line breaks allowed inside). A leading BOM is
 * dropped. Blank lines are skipped.
 */

/** Every record as an array of fields. Throws naming the line of an unterminated quote. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let line = 1;
  let quoteLine = 0;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const endRecord = () => {
    row.push(field);
    field = '';
    if (!(row.length === 1 && row[0] === '')) rows.push(row);
    row = [];
  };
  for (; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else {
        if (c === '\n') line++;
        field += c;
      }
    } else if (c === '"' && field === '') {
      quoted = true;
      quoteLine = line;
    } else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      endRecord();
      line++;
    } else {
      field += c;
    }
  }
  if (quoted) throw new Error(`unterminated quoted field starting on line ${quoteLine}`);
  if (field !== '' || row.length > 0) endRecord();
  return rows;
}
