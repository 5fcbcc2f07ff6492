import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Compares a presented header value with the accepted secrets in constant
 * time. Both sides are hashed first so the comparison never depends on (or
 * leaks) the secret's length, and every secret is compared even after a match
 * so the time taken does not say which one matched.
 */
export class SecretMatcher {
  readonly #digests: Buffer[];

  constructor(secrets: readonly string[]) {
    this.#digests = secrets.map((s) => digest(normaliseCredential(s)));
  }

  matches(presented: string | undefined): boolean {
    const given = digest(normaliseCredential(presented ?? ''));
    let ok = false;
    for (const d of this.#digests) ok = timingSafeEqual(d, given) || ok;
    return ok && presented !== undefined && presented !== '';
  }
}

/**
 * HTTP authentication schemes are case-insensitive (RFC 9110 §11.1), so a
 * configured `Basic dXNlcjpwYXNz` must accept `basic dXNlcjpwYXNz` too; the
 * credentials after the scheme are compared exactly. Any other value is
 * compared as it is: the service sends the configured value verbatim.
 */
export function normaliseCredential(value: string): string {
  const basic = /^basic[ \t]+(\S+)[ \t]*$/i.exec(value);
  return basic ? `Basic ${basic[1]}` : value;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
