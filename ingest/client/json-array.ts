/**
 * Splits a JSON array's text into its elements' texts without re-serializing
 * them: each event goes onto the stream as the bytes the service sent (so
 * numbers, escapes and key order survive exactly), and the split costs one
 * scan instead of a JSON.stringify per event. Pure; validation of each
 * element is the caller's JSON.parse.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * The texts of the top-level elements of `text`, trimmed, or null when
 * `text` is not shaped as one array (unbalanced, trailing data, empty
 * elements). Elements are not validated: `[1, tru]` splits into "1", "tru".
 */
export function splitJsonArray(text: string): string[] | null {
  const n = text.length;
  let i = 0;
  while (i < n && isSpace(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i) !== OPEN_ARRAY) return null;
  i++;
  const out: string[] = [];
  let depth = 0;
  let start = i;
  let closed = false;
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Skip the string: its brackets and commas are not structure.
      for (i++; i < n; i++) {
        const s = text.charCodeAt(i);
        if (s === BACKSLASH) i++;
        else if (s === QUOTE) break;
      }
      if (i >= n) return null;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      depth++;
    } else if (c === CLOSE_OBJECT || (c === CLOSE_ARRAY && depth > 0)) {
      if (--depth < 0) return null;
    } else if (depth === 0 && (c === COMMA || c === CLOSE_ARRAY)) {
      const element = text.slice(start, i).trim();
      if (element === '') {
        // `[]` is the only place an empty element is allowed.
        if (!(c === CLOSE_ARRAY && out.length === 0)) return null;
      } else {
        out.push(element);
      }
      start = i + 1;
      if (c === CLOSE_ARRAY) {
        closed = true;
        i++;
        break;
      }
    }
  }
  if (!closed) return null;
  for (; i < n; i++) if (!isSpace(text.charCodeAt(i))) return null;
  return out;
}
