/**
 * Splits a JSON array body into its elements' bytes without re-serializing
 * them: each event goes onto the stream as the bytes the service sent (so
 * numbers, escapes and key order survive exactly). The split works on the
 * reply's bytes and returns views into them, so an event costs neither a
 * JSON.stringify nor a string-to-bytes copy. Pure; validation is the
 * caller's JSON.parse of each element.
 *
 * Scanning bytes is safe for UTF-8: every byte of a multi-byte sequence is
 * >= 0x80, so none is ever taken for a quote, bracket or comma.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

function isSpace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * The top-level elements of the array in `body` from byte `from` on, trimmed,
 * as views of `body` (not copies), or null when the bytes are not shaped as
 * one array (unbalanced, trailing data, empty elements). Elements are not
 * validated: `[1, tru]` splits into "1", "tru".
 */
export function splitJsonArray(body: Buffer, from = 0): Buffer[] | null {
  const n = body.length;
  let i = from;
  while (i < n && isSpace(body[i])) i++;
  if (body[i] !== OPEN_ARRAY) return null;
  i++;
  const out: Buffer[] = [];
  let depth = 0;
  let start = i;
  let closed = false;
  for (; i < n; i++) {
    const c = body[i];
    if (c === QUOTE) {
      // Skip the string: its brackets and commas are not structure.
      for (i++; i < n; i++) {
        const s = body[i];
        if (s === BACKSLASH) i++;
        else if (s === QUOTE) break;
      }
      if (i >= n) return null;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      depth++;
    } else if (c === CLOSE_OBJECT || (c === CLOSE_ARRAY && depth > 0)) {
      if (--depth < 0) return null;
    } else if (depth === 0 && (c === COMMA || c === CLOSE_ARRAY)) {
      let s = start;
      let e = i;
      while (s < e && isSpace(body[s])) s++;
      while (e > s && isSpace(body[e - 1])) e--;
      if (s === e) {
        // `[]` is the only place an empty element is allowed.
        if (!(c === CLOSE_ARRAY && out.length === 0)) return null;
      } else {
        out.push(body.subarray(s, e));
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
  for (; i < n; i++) if (!isSpace(body[i])) return null;
  return out;
}
