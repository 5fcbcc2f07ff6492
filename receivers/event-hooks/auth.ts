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
    this.#digests = secrets.map(digest);
  }

  matches(presented: string | undefined): boolean {
    const given = digest(presented ?? '');
    let ok = false;
    for (const d of this.#digests) ok = timingSafeEqual(d, given) || ok;
    return ok && presented !== undefined && presented !== '';
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
