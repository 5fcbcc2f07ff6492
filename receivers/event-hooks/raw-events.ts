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
 *
 * The same pass measures how deep the body nests, so the receiver checks its
 * depth limit without a second walk over every byte (body.ts's
 * nestingExceeds). That check can come after JSON.parse: V8's parser is not
 * recursive and takes any depth; what the limit protects is the recursive code
 * that runs on the parsed value afterwards.
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
  // A plain loop: most strings are short, and a native indexOf per string costs more in calls than it saves.
  for (let j = i + 1; j < b.length; j++) {
    const c = b[j];
    if (c === QUOTE) return j + 1;
    if (c === BACKSLASH) j++; // the escaped byte, a quote included
  }
  return -1;
}

/**
 * The deepest nesting seen by the scan in progress: brackets open at once, outside strings. Module
 * state rather than a field threaded through every call: a scan is synchronous and never re-entered.
 */
let deepest = 0;

/** Index just past the value starting at `i`, which sits inside `level` open brackets; or -1. */
function skipValue(b: Buffer, i: number, level: number): number {
  const c = b[i];
  if (c === QUOTE) return skipString(b, i);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    // One pass like body.ts's nestingExceeds: brackets count only outside strings.
    let depth = level;
    let inString = false;
    for (; i < b.length; i++) {
      const x = b[i];
      if (inString) {
        if (x === BACKSLASH) i++;
        else if (x === QUOTE) inString = false;
      } else if (x === QUOTE) {
        inString = true;
      } else if (x === OPEN_OBJECT || x === OPEN_ARRAY) {
        if (++depth > deepest) deepest = depth;
      } else if (x === CLOSE_OBJECT || x === CLOSE_ARRAY) {
        if (--depth === level) return i + 1;
      }
    }
    return -1;
  }
  // A number, true, false or null: up to the next delimiter.
  while (i < b.length) {
    const x = b[i]!;
    if (x === COMMA || x === CLOSE_OBJECT || x === CLOSE_ARRAY || x === 0x20 || x === 0x0a || x === 0x0d || x === 0x09)
      break;
    i++;
  }
  return i;
}

interface Walked {
  /** Index just past the value, or -1 when it is not well formed. */
  readonly end: number;
  /** The elements' ranges of the array at the end of the path, when this value holds it. */
  readonly ranges: Array<[number, number]> | null;
}

const NOT_THERE = (end: number): Walked => ({ end, ranges: null });

/**
 * Walks the value starting at `i` following `path` (object keys, then the
 * array whose elements are wanted), visiting every byte once: members off the
 * path are skipped, the one on it descended into. A key given twice counts by
 * its last occurrence, as with JSON.parse. The value at `i` sits inside
 * `depth` open brackets, one per path step taken.
 */
function walk(b: Buffer, i: number, path: readonly string[], depth: number): Walked {
  if (depth === path.length) {
    if (b[i] !== OPEN_ARRAY) return NOT_THERE(skipValue(b, i, depth));
    if (depth + 1 > deepest) deepest = depth + 1;
    const out: Array<[number, number]> = [];
    i = skipSpace(b, i + 1);
    if (b[i] === CLOSE_ARRAY) return { end: i + 1, ranges: out };
    for (;;) {
      const end = skipValue(b, i, depth + 1);
      if (end === -1) return NOT_THERE(-1);
      out.push([i, end]);
      i = skipSpace(b, end);
      if (b[i] === CLOSE_ARRAY) return { end: i + 1, ranges: out };
      if (b[i] !== COMMA) return NOT_THERE(-1);
      i = skipSpace(b, i + 1);
    }
  }
  if (b[i] !== OPEN_OBJECT) return NOT_THERE(skipValue(b, i, depth));
  if (depth + 1 > deepest) deepest = depth + 1;
  let ranges: Array<[number, number]> | null = null;
  i = skipSpace(b, i + 1);
  if (b[i] === CLOSE_OBJECT) return { end: i + 1, ranges };
  for (;;) {
    if (b[i] !== QUOTE) return NOT_THERE(-1);
    const keyEnd = skipString(b, i);
    if (keyEnd === -1) return NOT_THERE(-1);
    const raw = b.subarray(i + 1, keyEnd - 1);
    const name = raw.includes(BACKSLASH) ? (JSON.parse(b.toString('utf8', i, keyEnd)) as string) : raw.toString('utf8');
    i = skipSpace(b, keyEnd);
    if (b[i] !== COLON) return NOT_THERE(-1);
    const start = skipSpace(b, i + 1);
    let end: number;
    if (name === path[depth]) {
      const inner = walk(b, start, path, depth + 1);
      end = inner.end;
      ranges = inner.ranges; // the last occurrence wins, even when it does not hold the array
    } else {
      end = skipValue(b, start, depth + 1);
    }
    if (end === -1) return NOT_THERE(-1);
    i = skipSpace(b, end);
    if (b[i] === CLOSE_OBJECT) return { end: i + 1, ranges };
    if (b[i] !== COMMA) return NOT_THERE(-1);
    i = skipSpace(b, i + 1);
  }
}

const EVENTS_PATH = ['data', 'events'] as const;

export interface DeliveryScan {
  /**
   * Byte ranges [start, end) of the elements of `data.events`, in order, or null when the body is
   * not shaped so (the caller refuses such a body by its parsed value; null is a safety net).
   */
  readonly ranges: Array<[number, number]> | null;
  /** How many brackets the body opens at once at its deepest, or null when the scan failed. */
  readonly depth: number | null;
}

/** One pass over a delivery body that JSON.parse accepted: its events' byte ranges and its depth. */
export function scanDelivery(body: Buffer): DeliveryScan {
  // a byte-order mark, as jsonText allows
  const start = body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
  deepest = 0;
  const walked = walk(body, skipSpace(body, start), EVENTS_PATH, 0);
  return walked.end === -1 ? { ranges: null, depth: null } : { ranges: walked.ranges, depth: deepest };
}
