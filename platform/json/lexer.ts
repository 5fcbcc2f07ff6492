/**
 * JSON read as bytes, token by token, accepting exactly what strict UTF-8 decoding plus JSON.parse accept
 * (RFC 8259: any depth, duplicate keys, lone surrogate escapes) without building any value. What the
 * readers on top of it add is where the values they need sit; what they share is the verdict.
 *
 * Why: JSON.parse builds every value, most of which a reader that only decides and copies bytes never
 * looks at, and the garbage costs again. Two hot paths read JSON this way: the sink's events
 * (consumers/clickhouse-sink/event-scan.ts) and the event hooks' deliveries
 * (receivers/event-hooks/delivery-scan.ts); each is held to JSON.parse by seeded-corruption tests.
 *
 * The caller checks UTF-8 first (node:buffer's isUtf8, native): a byte >= 0x80 is then never taken for
 * punctuation. A scan is synchronous and never re-entered, so its state lives here, in module variables
 * read by the readers as live bindings, rather than in an object threaded through every call: these are
 * the two paths' hottest loops. `begin` starts a scan, `finish` ends it; every function throws INVALID
 * where JSON.parse would throw.
 */

/** What a token holds. Strings are recorded with their quotes; STRING_ESCAPED needs JSON.parse to decode. */
export const Kind = {
  ABSENT: 0,
  STRING: 1,
  STRING_ESCAPED: 2,
  NUMBER: 3,
  TRUE: 4,
  FALSE: 5,
  NULL: 6,
  OBJECT: 7,
  ARRAY: 8,
} as const;

export const QUOTE = 0x22;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_OBJECT = 0x7b;
export const CLOSE_OBJECT = 0x7d;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_ARRAY = 0x5d;
const BACKSLASH = 0x5c;

/** Byte classes inside a string: 0 ordinary, 1 the closing quote, 2 an escape, 3 a raw control character. */
const IN_STRING = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) IN_STRING[c] = 3;
IN_STRING[QUOTE] = 1;
IN_STRING[BACKSLASH] = 2;
/** After a backslash: 1 for `" \ / b f n r t`, 2 for `u`. */
const ESCAPE = new Uint8Array(256);
for (const c of '"\\/bfnrt') ESCAPE[c.charCodeAt(0)] = 1;
ESCAPE[0x75] = 2;
/** 1 for an ASCII hex digit (either case): a `\u` escape's, and a uuid's (schemas/logevent.ts). */
export const HEX_DIGIT = new Uint8Array(256);
for (const c of '0123456789abcdefABCDEF') HEX_DIGIT[c.charCodeAt(0)] = 1;
/** Whitespace: 1 a space, 2 tab, LF or CR. */
const SPACE = new Uint8Array(256);
SPACE[0x20] = 1;
SPACE[0x09] = SPACE[0x0a] = SPACE[0x0d] = 2;

class Invalid extends Error {}
/** Thrown where JSON.parse would throw; the one exception a scan expects. */
export const INVALID = new Invalid('not valid JSON');

const EMPTY = new Uint8Array(0);
/** The bytes being scanned, and their length. */
export let buf: Uint8Array = EMPTY;
export let end = 0;
/** The same bytes, for reading four at a time (`ordinaryRun`); NO_WORDS between scans. */
const NO_WORDS = new DataView(EMPTY.buffer);
let words: DataView<ArrayBufferLike> = NO_WORDS;
/** Whether the last string skipped held an escape. */
export let escaped = false;
/** Whether any string since `begin` held an escape. */
export let escapes = false;
/** Whether whitespace since `begin` held a tab, line feed or carriage return. */
export let breaks = false;
/** The kind of the last scalar skipped. */
export let lastKind = 0;
/** The most containers `skipValue` saw open at once since `begin`, counting the `level` it was given. */
export let deepest = 0;
/** Open containers while skipping: 1 an object, 2 an array. Grows: JSON.parse takes any depth. */
let stack = new Uint8Array(64);

/** Starts a scan of `value`. */
export function begin(value: Uint8Array): void {
  buf = value;
  end = value.length;
  words = new DataView(value.buffer, value.byteOffset, value.length);
  escaped = escapes = breaks = false;
  lastKind = 0;
  deepest = 0;
}

/** Ends a scan: drops the reference to its bytes, and a stack grown by a deeply nested one. */
export function finish(): void {
  buf = EMPTY;
  end = 0;
  words = NO_WORDS;
  if (stack.length > 4096) stack = new Uint8Array(64);
}

/** A reader walking its own path opened a container inside `level` others: `deepest` counts it. */
export function opened(level: number): void {
  if (level + 1 > deepest) deepest = level + 1;
}

/** Past the whitespace at `p`. */
export function space(p: number): number {
  const b = buf;
  // Most tokens follow one another with no whitespace between them.
  if (b[p]! > 0x20) return p;
  for (;;) {
    const s = SPACE[b[p]!];
    if (s === 1) p++;
    else if (s === 2) {
      breaks = true;
      p++;
    } else return p;
  }
}

/**
 * Past the ordinary string bytes from `p` four at a time, stopping at (or up to three bytes before) the first
 * quote, backslash or control character, or near the end: the byte loops after it find which. Why: JSON events are
 * mostly string bytes, and one 32-bit read with a handful of integer operations decides four of them where the
 * byte loop makes four reads and four table lookups. Each test is exact for "some byte is": `(v - 0x01010101) &
 * ~v & 0x80808080` is non-zero exactly when a byte of v is zero (a byte >= 0x80 never sets its own high bit in
 * `~v`, and no byte borrows before the first zero one), and with 0x20 in place of 0x01, when a byte is below 0x20.
 */
function ordinaryRun(p: number): number {
  const w = words;
  const last = end - 4;
  while (p <= last) {
    const x = w.getInt32(p, true);
    const quote = x ^ 0x22222222;
    const slash = x ^ 0x5c5c5c5c;
    if ((((x - 0x20202020) & ~x) | ((quote - 0x01010101) & ~quote) | ((slash - 0x01010101) & ~slash)) & 0x80808080)
      return p;
    p += 4;
  }
  return p;
}

/** Past the string whose opening quote is at `p`; sets `escaped`. */
export function skipString(p: number): number {
  const b = buf;
  escaped = false;
  p = ordinaryRun(p + 1);
  for (;;) {
    // The tight loop over ordinary bytes; past the end, b[p] is undefined and so is its class.
    let k = IN_STRING[b[p]!];
    while (k === 0) k = IN_STRING[b[++p]!];
    if (k === 1) return p + 1;
    if (k !== 2) throw INVALID;
    escaped = escapes = true;
    p = skipEscape(p);
  }
}

/** Past the escape whose backslash is at `p`. */
function skipEscape(p: number): number {
  const b = buf;
  const e = ESCAPE[b[p + 1]!];
  if (e === 1) return p + 2;
  if (
    e === 2 &&
    HEX_DIGIT[b[p + 2]!] === 1 &&
    HEX_DIGIT[b[p + 3]!] === 1 &&
    HEX_DIGIT[b[p + 4]!] === 1 &&
    HEX_DIGIT[b[p + 5]!] === 1
  )
    return p + 6;
  throw INVALID;
}

function digits(p: number): number {
  const b = buf;
  while (p < end && b[p]! >= 0x30 && b[p]! <= 0x39) p++;
  return p;
}

/** Past the number at `p`: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
function skipNumber(p: number): number {
  const b = buf;
  if (b[p] === 0x2d) p++;
  if (b[p] === 0x30) p++;
  else {
    const q = digits(p);
    if (q === p) throw INVALID;
    p = q;
  }
  if (b[p] === 0x2e) {
    const q = digits(p + 1);
    if (q === p + 1) throw INVALID;
    p = q;
  }
  if (b[p] === 0x65 || b[p] === 0x45) {
    p++;
    if (b[p] === 0x2b || b[p] === 0x2d) p++;
    const q = digits(p);
    if (q === p) throw INVALID;
    p = q;
  }
  return p;
}

function literal(p: number, text: string): number {
  for (let k = 0; k < text.length; k++) if (buf[p + k] !== text.charCodeAt(k)) throw INVALID;
  return p + text.length;
}

/** Past a scalar at `p` (not an object or array), its kind in `lastKind`. */
export function skipScalar(p: number): number {
  const c = buf[p];
  if (c === QUOTE) {
    p = skipString(p);
    lastKind = escaped ? Kind.STRING_ESCAPED : Kind.STRING;
    return p;
  }
  if (c === 0x74) {
    lastKind = Kind.TRUE;
    return literal(p, 'true');
  }
  if (c === 0x66) {
    lastKind = Kind.FALSE;
    return literal(p, 'false');
  }
  if (c === 0x6e) {
    lastKind = Kind.NULL;
    return literal(p, 'null');
  }
  if (c === 0x2d || (c !== undefined && c >= 0x30 && c <= 0x39)) {
    lastKind = Kind.NUMBER;
    return skipNumber(p);
  }
  throw INVALID;
}

/**
 * Past the one JSON value at `p` (whitespace before it allowed), validated; iterative, so any depth. The
 * value sits inside `level` open containers, which `deepest` counts. Strings and keys are read here rather
 * than through skipString, and space() is called only where there is whitespace: most of a skipped value
 * is short strings between punctuation, where the calls cost more than the bytes (a fifth of a delivery's
 * scan).
 */
export function skipValue(p: number, level = 0): number {
  const b = buf;
  let depth = 0;
  /** The next token is an object's key. */
  let key = false;
  let escape = false;
  for (;;) {
    let c = b[p]!;
    if (c <= 0x20) c = b[(p = space(p))]!;
    if (c === QUOTE) {
      p = ordinaryRun(p + 1);
      let k = IN_STRING[b[p]!];
      for (;;) {
        while (k === 0) k = IN_STRING[b[++p]!];
        if (k === 1) break;
        if (k !== 2) throw INVALID;
        escape = true;
        p = skipEscape(p);
        k = IN_STRING[b[p]!];
      }
      p++;
      if (key) {
        c = b[p]!;
        if (c <= 0x20) c = b[(p = space(p))]!;
        if (c !== COLON) throw INVALID;
        p++;
        key = false;
        continue;
      }
    } else if (key) throw INVALID;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (level + depth + 1 > deepest) deepest = level + depth + 1;
      p = space(p + 1);
      if (b[p] === (c === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY)) p++;
      else {
        if (depth === stack.length) {
          const bigger = new Uint8Array(stack.length * 2);
          bigger.set(stack);
          stack = bigger;
        }
        stack[depth++] = c === OPEN_OBJECT ? 1 : 2;
        key = c === OPEN_OBJECT;
        continue;
      }
    } else p = skipScalar(p);
    // A value ended: close what it ends, or move on to the next member.
    for (;;) {
      if (depth === 0) {
        if (escape) escapes = true;
        return p;
      }
      c = b[p]!;
      if (c <= 0x20) c = b[(p = space(p))]!;
      const top = stack[depth - 1];
      if (c === COMMA) {
        p++;
        key = top === 1;
        break;
      }
      if (c !== (top === 1 ? CLOSE_OBJECT : CLOSE_ARRAY)) throw INVALID;
      p++;
      depth--;
    }
  }
}

/** The text of the escaped key (or string) token [from, to), as JSON.parse reads it. */
export function unescaped(from: number, to: number): string {
  return JSON.parse(Buffer.from(buf.buffer, buf.byteOffset + from, to - from).toString('utf8')) as string;
}
