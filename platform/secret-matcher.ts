import { timingSafeEqual } from 'node:crypto';

/**
 * Secrets are compared over this many bytes at least (more only for a longer
 * secret, rounded up to a power of two): the work per request is the same
 * whatever the secret's length, so timing cannot tell it.
 */
const MIN_WIDTH = 512;

/**
 * Compares a presented header value with the accepted secrets in constant
 * time. Each secret is kept zero-padded to one fixed width, and the presented
 * value is written into a buffer of that width: every comparison covers the
 * same number of bytes, so it never depends on (or leaks) the secret's length
 * or where a guess first differs. Every secret is compared even after a match
 * so the time taken does not say which one matched. Nothing is hashed per
 * request: the token hook checks this on every sign-in.
 */
export class SecretMatcher {
  readonly #width: number;
  readonly #secrets: { readonly padded: Buffer; readonly bytes: number }[];
  /** Reused for each presented value (matching is synchronous). */
  readonly #given: Buffer;

  constructor(secrets: readonly string[]) {
    const encoded = secrets.map((s) => Buffer.from(normaliseCredential(s), 'utf8'));
    let width = MIN_WIDTH;
    while (encoded.some((e) => e.length > width)) width *= 2;
    this.#width = width;
    this.#secrets = encoded.map((e) => {
      const padded = Buffer.alloc(width);
      e.copy(padded);
      return { padded, bytes: e.length };
    });
    this.#given = Buffer.alloc(width);
  }

  matches(presented: string | undefined): boolean {
    return this.matchIndex(presented) >= 0;
  }

  /**
   * Which accepted secret `presented` is (0 the first, 1 the second), or -1 for none. Every secret is
   * compared whichever matches, so the time taken says neither whether nor which.
   */
  matchIndex(presented: string | undefined): number {
    const value = normaliseCredential(presented ?? '');
    // The byte count is of the whole value; the buffer holds at most `width` bytes of it. A longer value
    // cannot match (no secret is longer than the width), and its length is the caller's own.
    const bytes = Buffer.byteLength(value, 'utf8');
    const given = this.#given;
    given.fill(0, given.write(value, 0, this.#width, 'utf8')); // written + filled: always `width` bytes
    let found = 0;
    // Last to first, selecting by mask: the first match wins (a secret listed twice is the first), and nothing
    // branches on what matched.
    for (let i = this.#secrets.length - 1; i >= 0; i--) {
      const s = this.#secrets[i]!;
      const mask = -((timingSafeEqual(s.padded, given) ? 1 : 0) & (s.bytes === bytes ? 1 : 0));
      found = (found & ~mask) | ((i + 1) & mask);
    }
    return presented !== undefined && presented !== '' ? found - 1 : -1;
  }
}

/**
 * HTTP authentication schemes are case-insensitive (RFC 9110 §11.1), so a
 * configured `Basic dXNlcjpwYXNz` must accept `basic dXNlcjpwYXNz` too; the
 * credentials after the scheme are compared exactly. Any other value is
 * compared as it is: the service sends the configured value verbatim.
 */
export function normaliseCredential(value: string): string {
  // Only a value starting with b/B can be a Basic credential: the others skip the regular expression.
  if ((value.charCodeAt(0) | 0x20) !== 0x62) return value;
  const basic = /^basic[ \t]+(\S+)[ \t]*$/i.exec(value);
  return basic ? `Basic ${basic[1]}` : value;
}
