/**
 * The common shapes of the key columns, recognised in the event's bytes so their text can be copied
 * instead of decoded, computed and encoded again: a lower-case ASCII uuid, a `published` in the
 * service's own form, an IPv4 address as sent, and header values that repeat record after record. Each
 * answers only for what it recognises; anything else goes the general way (rows.ts's functions on the
 * decoded value), so these change no column, only what it costs (event-tsv.test.ts checks both ways).
 */
import { TsvWriter } from '../../platform/store/tsv.js';
import { MAX_UUID_CHARS } from './rows.js';

const digit = (c: number | undefined) => c !== undefined && c >= 0x30 && c <= 0x39;

/**
 * Writes the DateTime64 text of a canonical `published` (platform/time.ts's isCanonicalTimestamp): the same
 * characters with a space for the `T` and no `Z`, what formatDateTime64 would print.
 */
export function writeCanonicalPublished(w: TsvWriter, b: Uint8Array, from: number): void {
  w.bytes(b, from, from + 10);
  w.byte(0x20);
  w.bytes(b, from + 11, from + 23);
}

/**
 * Whether the string content in [from, to) is an IPv4 address exactly as node's isIPv4 takes it (four
 * decimal parts of 0..255, no leading zeros): then rows.ts's clientIp keeps it as sent.
 */
export function plainIpv4(b: Uint8Array, from: number, to: number): boolean {
  let parts = 0;
  let at = from;
  while (parts < 4) {
    const start = at;
    let v = 0;
    while (at < to && digit(b[at])) v = v * 10 + (b[at++]! - 0x30);
    const n = at - start;
    if (n === 0 || n > 3 || v > 255 || (n > 1 && b[start] === 0x30)) return false;
    parts++;
    if (parts < 4) {
      if (b[at] !== 0x2e || at >= to) return false;
      at++;
    }
  }
  return at === to;
}

/**
 * Whether the string content in [from, to) is a uuid that needs nothing but ASCII lower-casing: printable
 * ASCII without spaces (so trimming changes nothing and it is not empty), within MAX_UUID_CHARS.
 */
export function plainUuid(b: Uint8Array, from: number, to: number): boolean {
  if (to <= from || to - from > MAX_UUID_CHARS) return false;
  for (let k = from; k < to; k++) {
    const c = b[k]!;
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}

/** Writes a plain uuid (see plainUuid) lower-cased, as String#toLowerCase does for ASCII. */
export function writeLowerAscii(w: TsvWriter, b: Uint8Array, from: number, to: number): void {
  const at = w.length;
  w.bytes(b, from, to);
  w.lowerAscii(at, w.length);
}

/**
 * One text field whose value usually repeats from one record to the next (a header: the org, the source,
 * the hook, the delivery): the escaped bytes of the last value are kept and copied while it lasts.
 */
export class RepeatedText {
  #last: string | undefined;
  #bytes = Buffer.alloc(0);

  write(w: TsvWriter, s: string): void {
    if (s !== this.#last) {
      this.#last = s;
      const scratch = new TsvWriter(s.length * 3 + 8);
      scratch.text(s);
      this.#bytes = Buffer.from(scratch.view());
    }
    w.bytes(this.#bytes, 0, this.#bytes.length);
  }
}
