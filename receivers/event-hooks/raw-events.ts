/**
 * Where each event of a delivery sits in the body's bytes, so each record's
 * value is the event exactly as the service sent it (numbers, escapes, key
 * order and all) without a JSON.stringify per event. The body is parsed once,
 * by JSON.parse, for validation; this scan only finds byte ranges.
 *
 * Pure, one pass over the bytes, for a body JSON.parse has already accepted
 * (valid UTF-8 JSON, so the scan need not validate). Follows JSON.parse where
 * a delivery could be ambiguous: a key given twice counts by its last
 * occurrence, and keys are compared after unescaping (`"d\u0061ta"` is data).
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

function skipSpace(b: Uint8Array, i: number): number {
  for (;;) {
    const c = b[i];
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
    else return i;
  }
}

/** Index just past the string opening at `i` (a quote), or -1. */
function skipString(b: Buffer, i: number): number {
  let q = i;
  for (;;) {
    q = b.indexOf(QUOTE, q + 1);
    if (q === -1) return -1;
    let slashes = 0;
    while (b[q - 1 - slashes] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return q + 1; // an even run of backslashes escapes itself, not the quote
  }
}

/** Index just past the value starting at `i`, or -1. */
function skipValue(b: Buffer, i: number): number {
  const c = b[i];
  if (c === QUOTE) return skipString(b, i);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    let depth = 0;
    for (; i < b.length; i++) {
      const x = b[i];
      if (x === QUOTE) {
        i = skipString(b, i);
        if (i === -1) return -1;
        i--;
      } else if (x === OPEN_OBJECT || x === OPEN_ARRAY) {
        depth++;
      } else if (x === CLOSE_OBJECT || x === CLOSE_ARRAY) {
        if (--depth === 0) return i + 1;
      }
    }
    return -1;
  }
  // A number, true, false or null: up to the next delimiter.
  while (i < b.length) {
    const x = b[i]!;
    if (x === COMMA || x === CLOSE_OBJECT || x === CLOSE_ARRAY || x === 0x20 || x === 0x0a || x === 0x0d || x === 0x09) break;
    i++;
  }
  return i;
}

/** The range of the value of `key` (its last occurrence) in the object starting at `i`, or null. */
function member(b: Buffer, i: number, key: string): [number, number] | null {
  if (b[i] !== OPEN_OBJECT) return null;
  let found: [number, number] | null = null;
  i = skipSpace(b, i + 1);
  if (b[i] === CLOSE_OBJECT) return null;
  for (;;) {
    if (b[i] !== QUOTE) return null;
    const keyEnd = skipString(b, i);
    if (keyEnd === -1) return null;
    const raw = b.subarray(i + 1, keyEnd - 1);
    const name = raw.includes(BACKSLASH) ? (JSON.parse(b.toString('utf8', i, keyEnd)) as string) : raw.toString('utf8');
    i = skipSpace(b, keyEnd);
    if (b[i] !== COLON) return null;
    const start = skipSpace(b, i + 1);
    const end = skipValue(b, start);
    if (end === -1) return null;
    if (name === key) found = [start, end];
    i = skipSpace(b, end);
    if (b[i] === CLOSE_OBJECT) return found;
    if (b[i] !== COMMA) return null;
    i = skipSpace(b, i + 1);
  }
}

/**
 * Byte ranges [start, end) of the elements of `data.events` in a delivery
 * body, in order, or null when the body is not shaped so (the caller has
 * already refused such a body by its parsed value; null is a safety net).
 */
export function eventRanges(body: Buffer): Array<[number, number]> | null {
  let i = 0;
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) i = 3; // a byte-order mark, as jsonText allows
  const data = member(body, skipSpace(body, i), 'data');
  if (data === null) return null;
  const events = member(body, data[0], 'events');
  if (events === null || body[events[0]] !== OPEN_ARRAY) return null;
  const out: Array<[number, number]> = [];
  i = skipSpace(body, events[0] + 1);
  if (body[i] === CLOSE_ARRAY) return out;
  for (;;) {
    const end = skipValue(body, i);
    if (end === -1) return null;
    out.push([i, end]);
    i = skipSpace(body, end);
    if (body[i] === CLOSE_ARRAY) return out;
    if (body[i] !== COMMA) return null;
    i = skipSpace(body, i + 1);
  }
}
