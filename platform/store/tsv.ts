/**
 * A batch of rows in ClickHouse's TabSeparated format, written straight into one growing buffer, so the
 * sink hands ClickHouse bytes copied from the records instead of objects it encodes again (JSONEachRow via
 * the client cost more CPU than everything else the sink did per event). Rows are contiguous: the bytes
 * of rows i..j are one subarray, which is what a bisected insert sends.
 *
 * Field text follows ClickHouse's TSV escaping: backslash, tab, line feed and carriage return are written
 * `\\`, `\t`, `\n`, `\r`; NULL is `\N`; an Array(String) is `['a','b']` with `'` and `\` escaped inside.
 */

const BACKSLASH = 0x5c;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x27;

/** Whether a string needs escaping as a TSV field (rare: hooklog's own values and most event text do not). */
const NEEDS_ESCAPE = /[\\\t\n\r]/;
const NEEDS_ESCAPE_QUOTED = /[\\\t\n\r']/;

function escapeChar(c: string): string {
  return c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : c === '\r' ? '\\r' : "\\'";
}

export class TsvWriter {
  #buf: Buffer;
  #len = 0;

  constructor(initialBytes = 1 << 20) {
    this.#buf = Buffer.allocUnsafe(initialBytes);
  }

  /** Bytes written so far: a row's start before it is written, its end after. */
  get length(): number {
    return this.#len;
  }

  /** Forgets everything written after `length` (a row that could not be finished). */
  truncate(length: number): void {
    this.#len = length;
  }

  /** The bytes in [from, to), without copying: valid until the next write. */
  view(from = 0, to = this.#len): Buffer {
    return this.#buf.subarray(from, to);
  }

  #room(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#len + n));
    this.#buf.copy(bigger, 0, 0, this.#len);
    this.#buf = bigger;
  }

  /** One byte (a separator). */
  byte(c: number): void {
    this.#room(1);
    this.#buf[this.#len++] = c;
  }

  tab(): void {
    this.byte(TAB);
  }

  endRow(): void {
    this.byte(LF);
  }

  /** `\N`: NULL. */
  nil(): void {
    this.#room(2);
    this.#buf[this.#len++] = BACKSLASH;
    this.#buf[this.#len++] = 0x4e;
  }

  /** Text the caller knows needs no escaping (digits, timestamps, booleans). */
  plain(s: string): void {
    this.#room(s.length * 3);
    this.#len += this.#buf.write(s, this.#len, 'utf8');
  }

  /** A string field, escaped. */
  text(s: string): void {
    this.plain(NEEDS_ESCAPE.test(s) ? s.replace(/[\\\t\n\r]/g, escapeChar) : s);
  }

  /** `s` as an element of an Array(String): quoted, with `'` and `\` (and tab, LF, CR) escaped. */
  quoted(s: string): void {
    this.byte(QUOTE);
    this.plain(NEEDS_ESCAPE_QUOTED.test(s) ? s.replace(/[\\\t\n\r']/g, escapeChar) : s);
    this.byte(QUOTE);
  }

  /**
   * Bytes of `src` in [from, to) as they are: the caller knows they need no escaping (a JSON string's
   * content without escapes holds no backslash and no control character).
   */
  bytes(src: Uint8Array, from: number, to: number): void {
    const n = to - from;
    this.#room(n);
    const buf = this.#buf;
    if (n < 48) {
      // Short spans (most event fields): a loop costs less than the native call's set-up.
      let at = this.#len;
      for (let k = from; k < to; k++) buf[at++] = src[k]!;
    } else buf.set(src.subarray(from, to), this.#len);
    this.#len += n;
  }

  /** Lower-cases the ASCII letters already written in [from, to) (String#toLowerCase, for ASCII text). */
  lowerAscii(from: number, to: number): void {
    const buf = this.#buf;
    for (let k = from; k < to; k++) {
      const c = buf[k]!;
      if (c >= 0x41 && c <= 0x5a) buf[k] = c + 0x20;
    }
  }

  /** Bytes of `src` in [from, to) as a quoted array element: the same, with `'` escaped. */
  quotedBytes(src: Uint8Array, from: number, to: number): void {
    this.#room((to - from) * 2 + 2);
    const buf = this.#buf;
    let at = this.#len;
    buf[at++] = QUOTE;
    for (let k = from; k < to; k++) {
      const c = src[k]!;
      if (c === QUOTE) buf[at++] = BACKSLASH;
      buf[at++] = c;
    }
    buf[at++] = QUOTE;
    this.#len = at;
  }

  /** Bytes of `src` in [from, to) escaped as a TSV field (a record value with escapes or raw whitespace). */
  escapedBytes(src: Uint8Array, from: number, to: number): void {
    this.#room((to - from) * 2);
    const buf = this.#buf;
    let at = this.#len;
    for (let k = from; k < to; k++) {
      const c = src[k]!;
      if (c === BACKSLASH || c === TAB || c === LF || c === CR) {
        buf[at++] = BACKSLASH;
        buf[at++] = c === BACKSLASH ? BACKSLASH : c === TAB ? 0x74 : c === LF ? 0x6e : 0x72;
      } else buf[at++] = c;
    }
    this.#len = at;
  }
}
