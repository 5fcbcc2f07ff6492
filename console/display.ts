/**
 * How the console shows a value it did not choose (a login, a user agent, a
 * country: the attacker's text). Shared by every page and chart label
 * (console/web) and by the CSV export, so they all show the same thing:
 *
 * - **Visible**: bidirectional controls (U+202E turns `moc.elpmaxe` into
 *   "example.com" on screen), zero-width and other invisible characters, C0/C1
 *   controls (NUL, tab, line breaks) and lone surrogates are drawn as
 *   `⟨U+202E⟩`, never obeyed. `⟨` itself is drawn as `⟨U+27E8⟩`, so the
 *   visible form is exact: `fromVisible` gives the value back.
 * - **Bounded**: a page shows at most `MAX_SHOWN` characters of a value (one
 *   100 KB login laid out in a table cell took the alert list 19–46 s), with
 *   the whole value on request.
 * - **Linked by reference**: a value longer than `MAX_LINKED` (or that looks
 *   like a reference) goes into a URL as `sha256:<hex>` of its UTF-8 bytes,
 *   which the API matches with ClickHouse's SHA256 (console/value-ref.ts); a
 *   100 KB value in a URL answered 431.
 *
 * Pure and dependency-free: it runs in the browser bundle and in Node.
 */

/** Characters shown per value on a page; the rest on request. */
export const MAX_SHOWN = 300;
/** Values up to this many characters go into URLs as they are; longer ones by reference. */
export const MAX_LINKED = 200;

/**
 * Drawn as `⟨U+XXXX⟩`: controls (Cc: NUL, tab, line breaks, C1), format characters (Cf: the bidi
 * embeddings, overrides and isolates, zero-width spaces and joiners, soft hyphen, BOM, tags), line and
 * paragraph separators, lone surrogates (Cs; with the `u` flag a surrogate pair is one code point), the
 * invisible letters and marks that are not Cf (Hangul fillers, combining grapheme joiner, Khmer and
 * Mongolian invisibles, variation selectors), and `⟨` itself, so the drawing is reversible. The same
 * categories as alerting's titles (consumers/alerting/grouping/labels.ts), and more.
 */
// The combining marks in the class are there to be drawn one by one, never combined: the lint rule is for classes
// written as if a combined sequence were one character.
const INVISIBLE =
  // eslint-disable-next-line no-misleading-character-class
  /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\u034F\u115F\u1160\u17B4\u17B5\u180B-\u180F\u27E8\u3164\uFE00-\uFE0F\uFFA0]/gu;
const MARK = /⟨U\+([0-9A-F]{4,6})⟩/g;

const mark = (ch: string): string => `⟨U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}⟩`;

/** A value as text: strings as they are, arrays joined, objects as JSON, null as ''. */
export function text(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.map(text).join(', ');
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** `s` with every invisible or control character drawn as `⟨U+XXXX⟩` (whole, not clipped). */
export function visible(s: string): string {
  return s.replace(INVISIBLE, mark);
}

/** The value `visible` drew: exact, since `⟨` in the value is drawn too. */
export function fromVisible(s: string): string {
  return s.replace(MARK, (_m, hex: string) => {
    const cp = parseInt(hex, 16);
    // A lone surrogate is not a code point fromCodePoint takes apart; fromCharCode keeps it as it was.
    return cp >= 0xd800 && cp <= 0xdfff ? String.fromCharCode(cp) : String.fromCodePoint(cp);
  });
}

export interface Shown {
  /** What to draw: visible, at most `max` characters, never cut inside a mark or a surrogate pair. */
  readonly text: string;
  /** Whether some of the value is left out. */
  readonly clipped: boolean;
  /** The whole value's length in UTF-16 units (as JavaScript counts characters). */
  readonly length: number;
}

/**
 * The part of `v` a page shows. Only a prefix is examined, so a 1 MB value
 * costs as much as a short one.
 */
export function shown(v: unknown, max = MAX_SHOWN): Shown {
  const s = text(v);
  const head = s.slice(0, max + 1);
  const vis = visible(head);
  if (vis.length <= max && head.length === s.length) return { text: vis, clipped: false, length: s.length };
  let cut = max;
  const open = vis.lastIndexOf('⟨', cut - 1);
  if (open >= 0 && vis.indexOf('⟩', open) >= cut) cut = open;
  const before = vis.charCodeAt(cut - 1);
  if (before >= 0xd800 && before <= 0xdbff) cut--;
  return { text: vis.slice(0, cut), clipped: true, length: s.length };
}

/**
 * `s` (a visible text) in pieces of about `size` characters, never cut inside
 * a mark or a surrogate pair; joined, they are `s`. The whole-value view draws
 * each piece as a block the browser lays out only when scrolled to: laid out
 * at once, 100 KB of mixed scripts took seconds.
 */
export function pieces(s: string, size = 2000): string[] {
  const out: string[] = [];
  let at = 0;
  while (at < s.length) {
    let end = Math.min(at + size, s.length);
    if (end < s.length) {
      const open = s.lastIndexOf('⟨', end - 1);
      if (open > at && s.indexOf('⟩', open) >= end) end = open;
      const before = s.charCodeAt(end - 1);
      if (before >= 0xd800 && before <= 0xdbff && end - 1 > at) end--;
    }
    out.push(s.slice(at, end));
    at = end;
  }
  return out;
}

/** `shown(v, max).text`, with `…` when clipped: for labels (chart axes, legends, options, headings). */
export function label(v: unknown, max = MAX_SHOWN): string {
  const s = shown(v, max);
  return s.clipped ? `${s.text}…` : s.text;
}

const USER_FIELD = /alternateId$|(^|[._])(login|email|user_?name)$/i;
const IP_FIELD = /ipAddress$|(^|[._])ip$/i;
const IP_SHAPE = /^(\d{1,3}\.){3}\d{1,3}$|^[0-9a-f]*:[0-9a-f:.]*$/i;

/**
 * Which page a value of an alert's key links to: by the rule's group-by field
 * when known (`actor.alternateId` → its user page, `client.ipAddress` → its IP
 * page, anything else → no link), else by the value's shape (an IP address, a
 * login with `@`).
 */
export function keyTarget(field: string | undefined, value: string): 'user' | 'ip' | 'value' {
  if (field !== undefined) return IP_FIELD.test(field) ? 'ip' : USER_FIELD.test(field) ? 'user' : 'value';
  return IP_SHAPE.test(value) ? 'ip' : value.includes('@') ? 'user' : 'value';
}

const REF = /^sha256:[0-9a-f]{64}$/;

/** Whether a URL value is a reference (`sha256:<hex>`) rather than the value itself. */
export function isRef(v: string): boolean {
  return REF.test(v);
}

/**
 * A value as a URL carries it: itself when short, else `sha256:<hex>` of its
 * UTF-8 bytes. A value that looks like a reference is referenced too, so a
 * reference in a URL always means one.
 */
export function linkValue(v: string): string {
  return v.length <= MAX_LINKED && !isRef(v) ? v : `sha256:${sha256Hex(v)}`;
}

// SHA-256 (FIPS 180-4), synchronous: crypto.subtle exists only in secure contexts (not plain HTTP on a LAN).
const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

type Eight = [number, number, number, number, number, number, number, number];

/** SHA-256 of the UTF-8 bytes of `s`, as lowercase hex. */
export function sha256Hex(s: string): string {
  const data = new TextEncoder().encode(s);
  const bits = data.length * 8;
  const padded = new Uint8Array((((data.length + 9 + 63) >> 6) << 6) >>> 0);
  padded.set(data);
  padded[data.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(bits / 2 ** 32));
  view.setUint32(padded.length - 4, bits >>> 0);
  const h = new Uint32Array([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  const w = new Uint32Array(64);
  const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n));
  for (let off = 0; off < padded.length; off += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(off + i * 4);
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15]!;
      const b = w[i - 2]!;
      const s0 = rotr(a, 7) ^ rotr(a, 18) ^ (a >>> 3);
      const s1 = rotr(b, 17) ^ rotr(b, 19) ^ (b >>> 10);
      w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, hh] = [...h] as Eight;
    for (let i = 0; i < 64; i++) {
      const t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i]! + w[i]!) >>> 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    const add = [a, b, c, d, e, f, g, hh];
    for (let i = 0; i < 8; i++) h[i] = (h[i]! + add[i]!) >>> 0;
  }
  return [...h].map((x) => x.toString(16).padStart(8, '0')).join('');
}
